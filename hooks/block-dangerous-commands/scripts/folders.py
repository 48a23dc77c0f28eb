"""Where one shell command moves: ``cd``, ``pushd``, ``popd``, chdir options, and what they read.

``Folders`` follows the shell state a command changes as it runs, as far as the command shows
it: the current folder, ``OLDPWD`` (``cd -``, ``~-``, ``$OLDPWD``), the ``pushd`` stack,
``CDPATH`` (this process's own to begin with) and the variables the command assigns
(``d=/; cd $d``, ``export CDPATH=/``, ``OLDPWD=/ cd -``). A place is ``(candidates, why)``:

- ``HERE``, the working folder the command starts in (also where a ``cd`` to a variable the
  command never sets leads, ``cd "$BUILD_DIR"``, and a relative ``cd`` from there);
- one folder when it is evident (``cd /usr``), several when ``CDPATH`` leaves a choice
  (``CDPATH=/ cd usr``: ``/usr`` or ``./usr``);
- unknown, with ``why`` saying so, where the command leads somewhere it does not show:
  ``cd -`` before any ``cd`` of its own, ``popd`` past what it pushed, ``cd ~user``, a
  ``CDPATH`` or ``OLDPWD`` it cannot read, ``sudo -i``. An unknown place is read as ``/`` and
  ``~`` both, so a relative delete of everything there (``rm -rf *``) is refused: fail closed.

``where(word)`` is the protected folder a relative word names from the current place. Every
structure is bounded (``MAX_STACK``, ``MAX_VARS``, ``MAX_CANDIDATES``): past a bound the place
or stack becomes unknown. Standard library only (this folder is copied alone).
"""

from __future__ import annotations

import posixpath
import re

from shell_lexer import HOME, ansi_c, protected

MAX_STACK = 64  # pushd entries followed
MAX_VARS = 256  # variables remembered, each at most MAX_VALUE characters
MAX_VALUE = 4096
MAX_CANDIDATES = 16  # folders one CDPATH lookup may lead to

Place = tuple[tuple[str | None, ...], str]  # (candidate folders, None = the working one; why)
HERE: Place = ((None,), "")
SETTERS = ("export", "declare", "typeset", "local", "readonly")
_NAME = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_ASSIGNED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?(\+?)=(.*)", re.S)
_ROTATE = re.compile(r"[+-]\d+")


def unknown(why: str) -> Place:
    """A place the command does not show, read as / and ~ both."""
    return (("/", "~"), why)


class Folders:
    """The current folder, OLDPWD, the pushd stack and the variables of one shell."""

    def __init__(self, cdpath: str | None) -> None:
        self.cwd: Place = HERE
        self.oldpwd: Place | None = None  # None: the shell's own, which the command does not show
        self.stack: list[Place] = []  # pushd's, top first; below it the shell's own (unknown)
        # variables the command set, by value; CDPATH from this process's environment. A
        # value None is one that cannot be known (read fail closed where cd reads it).
        self.vars: dict[str, str | None] = {} if cdpath is None else {"CDPATH": cdpath}

    def copy(self) -> Folders:
        """The same state, changed apart from this one (a subshell)."""
        twin = Folders(None)
        twin.cwd, twin.oldpwd, twin.stack, twin.vars = (
            self.cwd, self.oldpwd, list(self.stack), dict(self.vars))
        return twin

    def either(self, other: Folders) -> None:
        """Where this state or ``other`` is: the candidate folders of both."""
        (mine, why), (theirs, their_why) = self.cwd, other.cwd
        both = tuple(dict.fromkeys(mine + theirs))
        self.cwd = ((both, why or their_why) if len(both) <= MAX_CANDIDATES
                    else unknown("one of the folders a pipeline may end in"))

    def nested(self) -> Folders:
        """The state a nested shell (``sh -c``) starts with: the same folder and variables,
        an empty pushd stack (a new process has its own)."""
        inner = Folders(None)
        inner.cwd, inner.oldpwd, inner.vars = self.cwd, self.oldpwd, dict(self.vars)
        return inner

    # -- moving -------------------------------------------------------------------------

    def move(self, place: Place) -> None:
        self.oldpwd, self.cwd = self.cwd, place

    def chdir(self, verb: str, args: list[str], env: dict[str, str | None] | None = None) -> None:
        """Follow ``cd``, ``pushd`` or ``popd`` with ``args``; ``env``: the assignments
        written before it (``OLDPWD=/ cd -``)."""
        if verb == "popd":
            self.popd(args)
            return
        operands = [a for a in args if a == "-" or not a.startswith("-")]
        if verb == "cd":
            self.move(self.place_of(operands[0] if operands else "~", env))
            return
        rotate = next((a for a in args if _ROTATE.fullmatch(a)), None)
        if rotate is not None:
            self.stack = []  # rotated: what is where is no longer known
            self.move(unknown(f"the folder `pushd {rotate}` rotates to"))
        elif "-n" in args:  # only the stack changes
            if operands:
                self.push(self.place_of(operands[0], env))
        elif operands:
            target = self.place_of(operands[0], env)
            self.push(self.cwd)
            self.move(target)
        elif self.stack:  # pushd alone swaps the top two
            top, self.stack[0] = self.stack[0], self.cwd
            self.move(top)
        else:
            self.move(unknown("the folder `pushd` swaps to, pushed before this command"))

    def inside(self, target: str | None, env: dict[str, str | None] | None = None) -> Inside:
        """``with folders.inside(target):`` one command run in ``target`` (``env -C``,
        ``sudo -D``), the current folder restored after it; ``None``: where it is."""
        return Inside(self, None if target is None else self.place_of(target, env))

    def push(self, place: Place) -> None:
        self.stack.insert(0, place)
        del self.stack[MAX_STACK:]  # the bottom falls off: a popd that far is unknown

    def popd(self, args: list[str]) -> None:
        rotate = next((a for a in args if _ROTATE.fullmatch(a) and a != "+0"), None)
        if rotate is not None or "-n" in args:
            self.stack = []  # an entry removed without moving: which one is not followed
            return
        if self.stack:
            self.move(self.stack.pop(0))
        else:
            self.move(unknown("the folder `popd` returns to, pushed before this command"))

    # -- where a word leads -------------------------------------------------------------

    def place_of(self, target: str, env: dict[str, str | None] | None = None) -> Place:
        """The place ``cd target`` leads to."""
        look = {**self.vars, **env} if env else self.vars
        if target == "-":
            return self.old(look)
        if "$" in target and not HOME.match(target):
            expanded = self.expand(target, look)
            if isinstance(expanded, tuple):
                return expanded
            target = expanded
        tilde = re.match(r"~([^/]*)", target)
        if tilde and tilde.group(1):
            rest = target[tilde.end():].lstrip("/")
            if tilde.group(1) == "+":
                return self.joined(self.cwd, rest)
            if tilde.group(1) == "-":
                return self.joined(self.old(look), rest)
            return unknown(f"{tilde.group(0)}'s home folder, which this guard does not look up")
        if target.startswith("/") or HOME.match(target):
            return ((target,), "")
        return self.relative(target, look)

    def old(self, look: dict[str, str | None]) -> Place:
        """Where ``cd -`` leads: OLDPWD."""
        if "OLDPWD" in look:
            value = look["OLDPWD"]
            if value is None or "$" in value:
                return unknown("the folder OLDPWD names, which this command does not show")
            return self.place_of(value) if value != "-" else unknown("OLDPWD=-")
        if self.oldpwd is None:
            return unknown("the folder `cd -` returns to, from before this command")
        return self.oldpwd

    def expand(self, target: str, look: dict[str, str | None]) -> str | Place:
        """``target`` with the variables this command set put in; a place when it names
        OLDPWD or PWD whole, or a variable whose value is not known; ``HERE`` for a variable
        the command never set (read as the working folder, as before)."""
        whole = _NAME.fullmatch(target)
        name = whole and (whole.group(1) or whole.group(2))
        if name == "OLDPWD" and "OLDPWD" not in look:
            return self.old(look)
        if name == "PWD":
            return self.cwd
        out, end = [], 0
        for m in _NAME.finditer(target):
            value = self.variable(m.group(1) or m.group(2), look, m.start() == 0)
            if isinstance(value, tuple):
                return value
            out += [target[end:m.start()], value]
            end = m.end()
        text = "".join(out) + target[end:]
        home = HOME.match(text)
        return HERE if "$" in text[home.end() if home else 0:] else text

    def variable(self, name: str, look: dict[str, str | None], first: bool) -> str | Place:
        """One variable's value in a word: text, or the place the word then leads to."""
        if name in look:
            value = look[name]
            if value is None:
                return unknown(f"the folder ${name} names, which this command does not show")
            return value
        if name == "HOME" and first:
            return "$HOME"  # read as ~ by protected()
        if name in ("OLDPWD", "PWD"):
            (folders, why) = self.old(look) if name == "OLDPWD" else self.cwd
            if why or len(folders) != 1:
                return unknown(f"the folder ${name} names, which this command does not show")
            return folders[0] or "."
        return HERE  # a variable the command never set: read as the working folder

    def relative(self, target: str, look: dict[str, str | None]) -> Place:
        """``cd target`` for a relative target: through CDPATH, then from here."""
        candidates: list[str | None] = []
        searched = not target.startswith(("./", "../")) and target not in (".", "..")
        if searched and "CDPATH" in look:
            cdpath = look["CDPATH"]
            if cdpath is None:
                return unknown("a CDPATH this command does not show")
            for entry in cdpath.split(":") if cdpath else []:
                if "$" in entry:
                    return unknown(f"the CDPATH entry {entry}")
                if entry not in ("", "."):
                    base = ((entry,), "") if entry.startswith(("/", "~")) else self.cwd
                    candidates += self.joined(base, posixpath.join(entry, target)
                                              if base is self.cwd else target)[0]
        place = self.joined(self.cwd, target)
        candidates += place[0]
        kept = tuple(dict.fromkeys(candidates))
        if len(kept) > MAX_CANDIDATES:
            return unknown("one of the many folders CDPATH offers")
        return kept, place[1]

    @staticmethod
    def joined(place: Place, rest: str) -> Place:
        """``place``/``rest``: the working folder stays the working folder (a ``cd build``
        from where the command starts is not followed out of the project)."""
        candidates, why = place
        if not rest:
            return place
        return tuple(c if c is None else posixpath.join(c, rest) for c in candidates), why

    def where(self, word: str, here: bool = False) -> str | None:
        """The protected folder ``word`` names (see ``protected``), read from the current
        place when it is relative: ``*`` after ``cd /`` is ``/*``."""
        hit = protected(word, here)
        if hit or not word or word.startswith("/") or HOME.match(word):
            return hit
        candidates, why = self.cwd
        for folder in candidates:
            if folder is not None and protected(posixpath.join(folder, word), here=False):
                if not why and len(candidates) > 1:
                    why = (f"{protected(folder, here=False) or folder}, one of the folders "
                           "the command may be in by then (a cd that fails or is not chained "
                           "with &&, CDPATH, a pipeline)")
                return f"{word} in {why or protected(folder, here=False) or folder}"
        return None

    # -- variables ----------------------------------------------------------------------

    def value_of(self, word: str) -> tuple[str, str | None] | None:
        """(name, value) of an assignment word (``NAME=value``, ``NAME+=value``); the value
        None when it cannot be known; None for an array element."""
        m = _ASSIGNED.fullmatch(word)
        if m is None or m.group(2):
            return None
        name, plus = m.group(1), m.group(3)
        value: str | None = ansi_c(m.group(4))
        if value is not None and "$" in value:
            expanded = self.expand(value, self.vars)
            value = expanded if isinstance(expanded, str) and "$" not in expanded else None
        if plus and value is not None and name in self.vars:
            before = self.vars[name]
            value = None if before is None else before + value
        if value is not None and len(value) > MAX_VALUE:
            value = None
        return name, value

    def assign(self, word: str) -> None:
        """A shell variable set (``NAME=value`` alone, or after export/declare/...)."""
        pair = self.value_of(word)
        if pair is None:
            return
        name, value = pair
        if name == "OLDPWD":
            self.oldpwd = (unknown("the folder OLDPWD was set to, which this command does not "
                                   "show") if value is None else self.place_of(value))
        elif value is None and name != "CDPATH":
            self.vars.pop(name, None)  # read as one the command never set
        elif name in self.vars or len(self.vars) < MAX_VARS:
            self.vars[name] = value

    def command_env(self, words: list[str]) -> dict[str, str | None]:
        """The assignments written before one command, for it alone (``CDPATH=/ cd usr``)."""
        env: dict[str, str | None] = {}
        for word in words:
            pair = self.value_of(word)
            if pair is not None:
                env[pair[0]] = pair[1]
        return env

    def setter(self, verb: str, args: list[str]) -> None:
        """``export``/``declare``/``typeset``/``local``/``readonly`` NAME=value, ``unset``."""
        for arg in args:
            if arg.startswith(("-", "+")):
                continue
            if verb == "unset":
                self.unset(arg)
            elif "=" in arg:
                self.assign(arg)

    def unset(self, name: str) -> None:
        if name == "OLDPWD":
            self.oldpwd = unknown("the folder before this command (OLDPWD was unset)")
        else:
            self.vars.pop(name, None)


class Inside:
    """The context of ``Folders.inside``."""

    def __init__(self, folders: Folders, place: Place | None) -> None:
        self.folders, self.place, self.outer = folders, place, folders.cwd

    def __enter__(self) -> None:
        if self.place is not None:
            self.folders.cwd = self.place

    def __exit__(self, *exc: object) -> None:
        if self.place is not None:
            self.folders.cwd = self.outer
