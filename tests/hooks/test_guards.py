"""The bundled guards against the obvious rewrites of a dangerous command.

Each row is one real pre-tool-call event fired through the engine at a copy of one guard's
folder made alone (so a guard needs nothing outside its folder), the hook's script running
as a subprocess with the event on stdin. The tables hold commands that must be denied and
look-alikes that must pass. The limits of each guard are in its HOOK.md.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_hooks import Engine, Event, Outcome, Registry

pytestmark = pytest.mark.anyio

LIBRARY = Path(__file__).resolve().parents[2] / "hooks"
GUARDS = ("block-dangerous-commands", "protect-secrets", "block-prod-deploy")


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each guard copied alone into its own user hooks folder."""
    folders = {}
    for name in GUARDS:
        user_dir = tmp_path_factory.mktemp(name)
        shutil.copytree(LIBRARY / name, user_dir / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
        folders[name] = user_dir
    return folders


async def fire(user_dir: Path, work_dir: Path, tool_input: dict[str, Any],
               tool: str = "Shell") -> Outcome:
    async with Engine(Registry(user_dir, watch=False)) as engine:
        return await engine.fire(Event.create(
            event_type="before_tool", work_dir=str(work_dir), tool_name=tool,
            tool_input=tool_input))


def run_script(name: str, stdin: str) -> subprocess.CompletedProcess[str]:
    """The guard's script alone, for what the engine would not send (bad JSON)."""
    return subprocess.run([sys.executable, str(LIBRARY / name / "scripts" / "run.py")],
                          input=stdin, capture_output=True, text=True, timeout=60, check=False)


# -- block-dangerous-commands -----------------------------------------------------------------

DANGEROUS = [
    # nested shells
    "bash -c \"rm -rf /\"", "sh -c 'rm -rf /'", "zsh -c 'rm -rf ~'", "dash -c 'rm -rf /'",
    "bash -lc 'cd /tmp && rm -rf /'", "sh -c \"sh -c 'rm -rf /'\"",
    "env FOO=1 sh -c 'rm -rf /'", "env -i /bin/sh -c 'rm -rf /'", "su -c 'rm -rf /'",
    "eval 'rm -rf /'", "bash -c 'eval \"rm -rf /\"'", "watch -n 1 rm -rf /",
    # prefixes
    "sudo rm -rf /", "sudo -u root -- rm -rf /", "nice -n 10 rm -rf /", "timeout 5 rm -rf /",
    "nohup rm -rf / &", "command rm -rf /", "exec rm -rf /", "busybox rm -rf /",
    # xargs fed /
    "echo / | xargs rm -rf", "printf '/\\n' | xargs -I{} rm -rf {}", "xargs rm -rf <<< /",
    "ls / | xargs rm -rf", "find / -name x | xargs rm -rf",
    # substitutions, chains, newlines, grouping
    "echo $(rm -rf /)", "echo `rm -rf ~`", "ls; rm -rf /", "ls && rm -rf /",
    "false || rm -rf /", "ls | rm -rf /", "ls\nrm -rf /", "ls\n  rm -rf ~/",
    "if true; then rm -rf /; fi", "( rm -rf / )", "{ rm -rf /; }",
    # spellings of rm and of its target
    "r''m -rf /", "\\rm -rf /", "/bin/rm -rf /", "\"rm\" -rf /", "/bin/r? -rf /",
    "rm -rf \"/\"", "rm -rf /.", "rm -rf //", "rm -rf /usr/..", "rm -rf ~/", "rm -rf ${HOME}",
    "rm -rf \"$HOME\"/", "rm -r --no-preserve-root /", "rm --rec -f /", "rm -rf $'\\x2f'",
    "rm -rf /{usr,etc}", "rm -rf \"/",
    # find
    "find / -delete", "find ~ -name '*.tmp' -delete", "find / -exec rm -rf {} +",
    "find $HOME -type f -exec rm {} \\;", "find /usr -delete",
    # interpreter one-liners
    "python3 -c 'import shutil; shutil.rmtree(\"/\")'",
    "python -c \"import shutil, os; shutil.rmtree(os.path.expanduser('~'))\"",
    "python3 -c 'from pathlib import Path; import shutil; shutil.rmtree(Path.home())'",
    "python3.11 -c 'import shutil;shutil.rmtree(\"/\", ignore_errors=True)'",
    "python3 -c 'import os; os.system(\"rm -rf /\")'",
    "python3 -c 'import subprocess; subprocess.run([\"rm\", \"-rf\", \"/\"])'",
    "uv run python -c 'import shutil; shutil.rmtree(\"/\")'",
    "node -e \"require('fs').rmSync('/', {recursive: true, force: true})\"",
    "node -e \"require('child_process').execSync('rm -rf /')\"",
    "node -e \"const fs=require('fs'); fs.rmSync(require('os').homedir(), {recursive:true})\"",
    "deno eval \"Deno.removeSync('/', {recursive: true})\"",
    "perl -MFile::Path -e 'rmtree(\"/\")'",
    "perl -e 'use File::Path qw(remove_tree); remove_tree($ENV{HOME})'",
    "perl -e 'system(\"rm -rf /\")'", "perl -e '`rm -rf /`'",
    "ruby -rfileutils -e 'FileUtils.rm_rf(\"/\")'",
    "ruby -e 'require \"fileutils\"; FileUtils.rm_rf Dir.home'", "ruby -e 'system(\"rm -rf ~\")'",
    "php -r 'system(\"rm -rf /\");'",
    # heredocs and stdin to a shell or an interpreter
    "python3 - <<'EOF'\nimport shutil\nshutil.rmtree('/')\nEOF",
    "python3 <<EOF\nimport os\nos.system('rm -rf /')\nEOF",
    "node <<'JS'\nrequire('fs').rmSync('/', {recursive: true})\nJS",
    "bash <<EOF\nrm -rf /\nEOF", "cat <<EOF | sh\nrm -rf ~\nEOF", "echo 'rm -rf /' | bash",
    "bash <<< 'rm -rf /'", "cat > /tmp/x.sh <<'EOF'\nrm -rf /\nEOF\nbash /tmp/x.sh",
    "x=$(bash <<EOF\nrm -rf /\nEOF\n)", "echo \"$(cat <<EOF\nhi\nEOF\n)\"; rm -rf /",
    # the rest of the table
    "chmod -R 777 \"/\"", "chown -R nobody /", "rsync -a --delete empty/ /", "mv ~ /tmp/gone",
    "\"mk\"fs /dev/sda", "python3 -c 'open(\"/dev/sda\", \"wb\").write(b\"0\" * 512)'",
    "curl x | \"ba\"sh",
    # a recursive delete of everything here, after a cd to /, ~ or a system folder
    "cd / && rm -rf *", "cd / ; rm -rf *", "cd ~ && rm -rf *", "cd / || rm -rf *",
    "cd /\nrm -rf *", "cd && rm -rf .", "cd $HOME && rm -rf ./*", "cd ~/ && rm -r -f *",
    "cd // && rm --recursive *", "pushd / && rm -rf *", "(cd / && rm -rf *)",
    "cd / && (rm -rf *)", "cd / && find . -delete", "cd ~ && find -delete",
    "cd / && bash -c 'rm -rf *'", "sh -c 'cd / && rm -rf *'", "cd /usr && rm -rf *",
    "cd / && rm -rf usr", "cd -P / && rm -rf -- .*", "eval cd / && rm -rf *",
    "cd / && ls | xargs rm -rf", "cd / && python3 -c 'import shutil; shutil.rmtree(\".\")'",
    "eval " * 12 + "cd / && rm -rf *",
]

# Where the shell goes, in every ordinary form: each lands in / (or somewhere the command does
# not show, read as / and ~: fail closed), then deletes everything there.
CD_FORMS = [
    # cd - : OLDPWD, known from an earlier cd, set by the command, or not known at all
    "cd / && cd /tmp/x && cd - && rm -rf *", "cd - && rm -rf *", "cd ~- && rm -rf *",
    "OLDPWD=/ cd - && rm -rf *", "OLDPWD=/; cd -; rm -rf *", "export OLDPWD=/; cd - && rm -rf *",
    "cd \"$OLDPWD\" && rm -rf *", "cd /tmp && unset OLDPWD; cd -; rm -rf *",
    # pushd ... popd, and the stack the command did not build
    "cd / && pushd /tmp/x && popd && rm -rf *", "pushd /; pushd /tmp/x; popd; rm -rf *",
    "cd / && pushd /tmp && pushd && rm -rf *", "popd && rm -rf *", "pushd +1 && rm -rf *",
    # CDPATH, for one command or the rest of it
    "CDPATH=/ cd usr && rm -rf *", "export CDPATH=/; cd usr && rm -rf *",
    "CDPATH=/tmp:/ ; cd etc; find . -delete", "declare -x CDPATH=:/; cd usr && rm -rf ./*",
    # a command run somewhere else
    "env -C / rm -rf *", "env --chdir=/ rm -rf *", "env --chdir / rm -rf *", "env -iC/ rm -rf *",
    "sudo -D / rm -rf *", "sudo --chdir=/ rm -rf *", "sudo -i rm -rf *", "su - -c 'rm -rf *'",
    # home folders by user, and the quoted spellings of /
    "cd ~root && rm -rf *", "cd ~bin && rm -rf *", "cd ~someone && rm -rf ./*",
    "cd $'/' && rm -rf *", "cd $\"/\" && rm -rf *", "rm -rf $'/'",
    # a variable the command set itself
    "d=/; cd $d && rm -rf *", "d=/usr; cd \"${d}\" && rm -rf *",
    # subshells and pipelines: a cd there moves nothing after it (bash), or does (zsh's last)
    "cd / && (cd /tmp/x) && rm -rf *", "cd / && cd /tmp/x | true && rm -rf *",
    "cd / ; cd /tmp/x & rm -rf *", "true | cd / ; rm -rf *", "cd / && echo | cd /tmp/x; rm -rf *",
    # a cd that may fail: what follows without && runs where the command was
    "cd / ; cd no-such-dir ; rm -rf *", "cd /\ncd /tmp/x\nrm -rf *", "cd / && cd /tmp/x || rm -rf *",
    "d=$'/'; cd $d && rm -rf *",
]

LOOK_ALIKES = [
    "ls", "echo \"rm -rf /\"", "rm -rf ./build", "grep -r \"rm -rf /\" .",
    "git commit -m \"rm -rf / is blocked\"", "python3 -c 'print(\"rm -rf /\")'",
    "find . -name '*.pyc' -delete", "find build -delete", "rm -rf node_modules",
    "echo 'rm -rf /' > notes.txt", "cat <<'EOF' > notes.md\nNever run rm -rf / on a server.\nEOF",
    "rm -rf /tmp/build", "rm -rf ~/proj/build", "find /tmp/x -delete",
    "find . -type d -name __pycache__ -exec rm -rf {} +", "rm -rf \"$BUILD_DIR\"",
    "python3 -c 'import shutil; shutil.rmtree(\"build\")'",
    "node -e \"require('fs').rmSync('dist', {recursive: true})\"",
    "python3 -c 'import os; os.system(\"echo rm -rf /\")'",
    "python3 -c 'import subprocess; subprocess.run([\"echo\", \"rm -rf /\"])'",
    "ruby -e 'puts \"rm -rf /\"'", "perl -e 'print \"rm -rf /\\n\"'", "bash -c 'echo rm -rf /'",
    "sh -c 'ls /'", "echo / | xargs ls", "# rm -rf /\nls", "ls # don't rm -rf /",
    "chmod -R u+w .", "rsync -a --delete src/ dest/", "mv build old-build",
    "git rm -r --cached .", "make clean && rm -rf dist", "docker run --rm alpine ls /",
    # everything in a folder the command moved to that is not / , ~ or a system folder
    "cd /tmp/build && rm -rf *", "cd build && rm -rf ./*", "cd ~/proj && rm -rf *",
    "cd $HOME/proj && rm -rf ./*", "cd / && rm -rf tmp/x", "cd / && rm -f *", "cd / && ls",
    "cd / && rm -rf *.log", "sh -c 'cd /' && rm -rf *", "cd / && cd /tmp/x && rm -rf *",
    "cd / && cd tmp/x && rm -rf *", "cd \"$BUILD_DIR\" && rm -rf *", "cd ~ && find proj -delete",
    # ordinary moves that stay in the project or a folder of its own
    "cd build && rm -rf *", "pushd src; popd; ls", "pushd build && rm -rf * && popd",
    "cd build && cd - && rm -rf dist", "cd /tmp/a && cd /tmp/b && cd - && rm -rf *",
    "CDPATH=/tmp cd build && rm -rf *", "env -C build rm -rf *", "sudo -D /tmp/x rm -rf *",
    "cd - && ls", "cd ~root && ls", "cd - && rm -rf build", "d=/tmp/x; cd $d && rm -rf *",
    "cd $'/tmp/x' && rm -rf *", "sudo -u bob rm -rf build", "echo $? && rm -rf build",
    "(cd /) && rm -rf *", "cd / | cat; rm -rf *", "cd build && rm -rf * | tee log",
    # how agents commit: the message in a heredoc inside $(...), quotes and all
    "git commit -m \"$(cat <<'EOF'\nGuard: it's now blocking \"rm -rf /\" variants\n\n"
    "Co-Authored-By: an agent\nEOF\n)\"",
]


@pytest.fixture(autouse=True)
def no_cdpath(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook reads CDPATH from its environment: none unless a test sets one."""
    monkeypatch.delenv("CDPATH", raising=False)


@pytest.mark.parametrize("command", DANGEROUS + CD_FORMS)
async def test_block_dangerous_commands_denies(alone: dict[str, Path], project: Path,
                                               command: str) -> None:
    outcome = await fire(alone["block-dangerous-commands"], project, {"command": command})
    assert outcome.denied and outcome.blocked_by == "block-dangerous-commands", outcome
    assert (outcome.reason or "").startswith("Dangerous command blocked:")


async def test_a_cdpath_from_the_environment_is_followed(
    alone: dict[str, Path], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CDPATH", "/")
    user_dir = alone["block-dangerous-commands"]
    outcome = await fire(user_dir, project, {"command": "cd usr && rm -rf *"})
    assert outcome.denied, outcome
    assert "* in /usr, one of the folders the command may be in" in (outcome.reason or "")
    assert not (await fire(user_dir, project, {"command": "cd build && rm -rf *"})).denied


@pytest.mark.parametrize("command", LOOK_ALIKES)
async def test_block_dangerous_commands_lets_look_alikes_pass(
    alone: dict[str, Path], project: Path, command: str
) -> None:
    outcome = await fire(alone["block-dangerous-commands"], project, {"command": command})
    assert not outcome.denied, outcome.reason


async def test_block_dangerous_commands_reads_an_argument_vector(
    alone: dict[str, Path], project: Path
) -> None:
    guard = alone["block-dangerous-commands"]
    assert (await fire(guard, project, {"command": ["bash", "-lc", "rm -rf /"]})).denied
    assert not (await fire(guard, project, {"command": ["echo", "rm -rf /"]})).denied


@pytest.mark.parametrize(("why", "command", "reason"), [
    ("nested past the depth bound", "eval " * 12 + "rm -rf /", "rm -r on /"),
    ("substitutions past it", "echo " + "$(" * 12 + "rm -rf ~" + ")" * 12, "rm -r on ~"),
    ("a padded find", "find / " + "/tmp " * 20000 + "-delete", "find /"),
    ("too long to read", "echo " + "a" * 1_000_001, "too long to check"),
    ("too many calls", "python3 -c '" + "run(\"ls\");" * 300 + "'", "too many calls"),
])
def test_block_dangerous_commands_bounds_its_work(why: str, command: str, reason: str) -> None:
    done = run_script("block-dangerous-commands", json.dumps(
        {"event_type": "before_tool", "tool_name": "Shell", "tool_input": {"command": command}}))
    assert done.returncode == 2 and reason in done.stderr, (why, done.stderr[:300])


def test_block_dangerous_commands_fails_closed_on_what_it_cannot_read() -> None:
    assert run_script("block-dangerous-commands", "{not json").returncode == 2
    assert run_script("block-dangerous-commands", json.dumps(
        {"tool_input": {"command": {"not": "text"}}})).returncode == 2
    assert run_script("block-dangerous-commands", json.dumps(
        {"tool_input": {"path": "x"}})).returncode == 0  # nothing to run


def test_the_matcher_lets_quote_split_verbs_reach_the_script() -> None:
    registry = Registry(LIBRARY, watch=False)
    hook = next(h for h in registry.hooks() if h.name == "block-dangerous-commands")
    for command in ("r''m -rf /", "\\rm -rf /", "/bin/r? -rf /", "find / -delete"):
        assert hook.matches("Shell", {"command": command}), command
    assert not hook.matches("Shell", {"command": "ls -la"})


# -- protect-secrets --------------------------------------------------------------------------

SECRET_WRITES = [
    "bash -c 'echo K=1 > .env'", "sh -c \"cp x .env\"", "eval 'tee .env < x'",
    "echo K=1 > \".e\"nv", "cp -f a .env", "install -m 600 a ~/.ssh/id_rsa", "ln -sf /tmp/x .env",
    "dd if=x of=.env", "sed -i 's/a/b/' .env", "curl -o .env https://example.com/x",
    "wget -O .env https://example.com/x", "truncate -s 0 .env", "cp x \\\n  .env",
    "cat > .env <<EOF\nK=1\nEOF", "echo x | sudo tee -a /root/.aws/credentials",
    "python3 -c 'open(\".env\", \"w\").write(\"K=1\")'",
    "python3 -c 'from pathlib import Path; Path(\".env\").write_text(\"K=1\")'",
    "python3 -c 'import shutil; shutil.copy(\"x\", \"id_rsa\")'",
    "python3 - <<'EOF'\nwith open('.env', 'a') as f:\n    f.write('K=1')\nEOF",
    "node -e \"require('fs').writeFileSync('.env', 'K=1')\"",
    "ruby -e 'File.write(\".env\", \"K=1\")'",
    "perl -e 'open(my $f, \">\", \".env\"); print $f \"K=1\"'",
]
SECRET_LOOK_ALIKES = [
    "cat .env", "grep KEY .env", "python3 -c 'print(open(\".env\").read())'",
    "node -e \"console.log(require('fs').readFileSync('.env', 'utf8'))\"",
    "cp .env.example .env.sample", "ls -la ~/.ssh", "sed 's/a/b/' .env", "source .env && npm start",
    "python3 -c 'open(\"out.txt\", \"w\").write(\"x\")'", "curl -o page.html https://example.com",
]


@pytest.mark.parametrize("command", SECRET_WRITES)
async def test_protect_secrets_denies(alone: dict[str, Path], project: Path,
                                      command: str) -> None:
    outcome = await fire(alone["protect-secrets"], project, {"command": command})
    assert outcome.denied and outcome.blocked_by == "protect-secrets", outcome


@pytest.mark.parametrize("command", SECRET_LOOK_ALIKES)
async def test_protect_secrets_lets_look_alikes_pass(alone: dict[str, Path], project: Path,
                                                     command: str) -> None:
    outcome = await fire(alone["protect-secrets"], project, {"command": command})
    assert not outcome.denied, outcome.reason


# -- block-prod-deploy ------------------------------------------------------------------------

PROD_CHANGES = [
    "bash -c 'kubectl apply -f x.yaml --context prod'",
    "kubectl apply -f x.yaml \\\n  --context prod",
    "terraform apply \\\n  -var-file=prod.tfvars", "ter'r'aform apply -var-file=prod.tfvars",
    "k\\ubectl delete ns x -n production",
    "python3 -c 'import os; os.system(\"./deploy.sh prod\")'",
    "eval \"helm upgrade api ./chart --kube-context prod\"", "./deploy.sh \"pr\"od",
    "sh <<EOF\nterraform destroy -var-file=prod.tfvars\nEOF", "pulumi up --stack prod",
    "git push origin HEAD:refs/heads/prod",
    "kubectl -n staging get pods; kubectl delete pod x -n prod",
]
PROD_LOOK_ALIKES = [
    "kubectl get pods -n production", "./deploy.sh staging", "git push origin main",
    "terraform plan -var-file=prod.tfvars", "helm template x -f values-prod.yaml",
    "grep -r production README.md",
]


@pytest.mark.parametrize("command", PROD_CHANGES)
async def test_block_prod_deploy_denies(alone: dict[str, Path], project: Path,
                                        command: str) -> None:
    outcome = await fire(alone["block-prod-deploy"], project, {"command": command})
    assert outcome.denied and outcome.blocked_by == "block-prod-deploy", outcome


@pytest.mark.parametrize("command", PROD_LOOK_ALIKES)
async def test_block_prod_deploy_lets_look_alikes_pass(alone: dict[str, Path], project: Path,
                                                       command: str) -> None:
    outcome = await fire(alone["block-prod-deploy"], project, {"command": command})
    assert not outcome.denied, outcome.reason


@pytest.mark.parametrize(("name", "padding"), [
    ("block-prod-deploy", "deploy " * 100_000),
    ("block-prod-deploy", "kubectl apply --context=" * 40_000),
    ("protect-secrets", "tee " * 200_000),
    ("protect-secrets", "\"type\": \"service_account\" " * 30_000),
])
def test_a_padded_command_still_gets_an_answer(name: str, padding: str) -> None:
    """Linear work: the padding once made these hooks run for minutes (and a slow hook is
    killed at its timeout, which block-prod-deploy's fail-open turns into an allow). The
    answer is checked, not the time (speed is measured in bench/, not asserted)."""
    done = run_script(name, json.dumps({"tool_name": "Shell",
                                        "tool_input": {"command": padding + "; ./deploy.sh prod"
                                                       if name == "block-prod-deploy"
                                                       else padding + " > .env"}}))
    assert done.returncode == 2, done.stderr[:300]
