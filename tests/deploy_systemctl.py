"""A stand-in for ``systemctl`` on the hosts of ``tests/integration/test_deploy_guide.py``.

The deployment guide (docs/deploy.md) starts, stops and restarts its daemons with
``systemctl``; a test host (a network namespace, with its own ``/etc``, ``/var/lib`` and
``/opt``) has no systemd. This script, on the hosts' ``PATH`` as ``systemctl``, does what
systemd does with the units the guide installed in ``/etc/systemd/system``, for the settings
they use: ``EnvironmentFile=`` and ``Environment=``, ``StateDirectory=`` (made, owned by
``User=``, mode ``StateDirectoryMode=``), ``User=``/``Group=``, ``UMask=``, ``LimitNOFILE=``,
``WorkingDirectory=``, ``ExecStart=`` (``${VAR}`` expanded), ``KillSignal=`` and
``TimeoutStopSec=`` on stop. Not done: the sandboxing (``ProtectSystem=`` and the rest, checked
only for presence by tests/unit/test_deploy_units.py) and ``Restart=``.

Verbs: ``daemon-reload``, ``enable [--now]``, ``start``, ``stop``, ``restart``, ``is-active``,
``disable``. A started unit's pid and output (its "journal") are kept in ``$DEPLOY_TEST_RUN``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import resource
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.deploy_units import Unit, expand_exec, parse_unit, read_environment_file

UNIT_DIR = Path("/etc/systemd/system")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PASSED = ("PYTHONPATH",)
"""What the test's own environment gives every daemon: its checkout's code."""


def _run_dir() -> Path:
    return Path(os.environ["DEPLOY_TEST_RUN"])


def _unit_name(name: str) -> str:
    return name if "." in name else f"{name}.service"


def _pid(name: str) -> int | None:
    try:
        pid = int((_run_dir() / f"{name}.pid").read_text())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2 :].split()[0] != "Z"


def _environment(unit: Unit, user: pwd.struct_passwd | None) -> dict[str, str]:
    env = {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"}
    env.update({k: os.environ[k] for k in PASSED if k in os.environ})
    if user is not None:
        env.update(HOME=user.pw_dir, USER=user.pw_name, LOGNAME=user.pw_name)
    for item in unit.all("Service", "Environment"):
        for word in shlex.split(item):
            key, _, value = word.partition("=")
            env[key] = value
    for item in unit.all("Service", "EnvironmentFile"):
        optional = item.startswith("-")
        path = Path(item.lstrip("-"))
        if optional and not path.exists():
            continue
        env.update(read_environment_file(path))
    return env


def start(name: str) -> None:
    if _pid(name) is not None:
        return
    unit = parse_unit(UNIT_DIR / name)
    user_name = unit.get("Service", "User")
    user = pwd.getpwnam(user_name) if user_name else None
    group = unit.get("Service", "Group")
    gid = user.pw_gid if user is not None else 0
    if group:
        import grp

        gid = grp.getgrnam(group).gr_gid
    mode = int(unit.get("Service", "StateDirectoryMode", "0755"), 8)
    for state in unit.get("Service", "StateDirectory").split():
        path = Path("/var/lib") / state
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(mode)
        if user is not None:
            os.chown(path, user.pw_uid, gid)
    env = _environment(unit, user)
    argv = expand_exec(unit.exec_start, env)
    umask = int(unit.get("Service", "UMask", "0022"), 8)
    nofile = unit.get("Service", "LimitNOFILE")

    if nofile:  # here, inherited: a container may not let even root raise its hard limit
        soft, _, hard = nofile.partition(":")
        want = (int(soft), int(hard or soft))
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, want)
        except (ValueError, OSError):
            limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want[0], limit), limit))

    def become() -> None:
        os.umask(umask)
        if user is not None:
            os.setgid(gid)
            os.initgroups(user.pw_name, gid)
            os.setuid(user.pw_uid)

    log = open(_run_dir() / f"{name}.log", "ab")  # noqa: SIM115 - handed to the daemon
    log.write(f"--- {time.strftime('%H:%M:%S')} start: {shlex.join(argv)}\n".encode())
    log.flush()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=unit.get("Service", "WorkingDirectory", "/"),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=become,
    )
    (_run_dir() / f"{name}.pid").write_text(str(proc.pid))


def stop(name: str) -> None:
    pid = _pid(name)
    if pid is None:
        return
    unit = parse_unit(UNIT_DIR / name)
    sig = getattr(signal, unit.get("Service", "KillSignal", "SIGTERM"))
    timeout = float(unit.get("Service", "TimeoutStopSec", "90").rstrip("s"))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    (_run_dir() / f"{name}.pid").unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("-")]
    now = "--now" in argv
    if not args:
        print("usage: systemctl VERB [UNIT...]", file=sys.stderr)
        return 2
    verb, names = args[0], [_unit_name(n) for n in args[1:]]
    for name in names:
        if verb in ("start", "restart", "enable", "disable", "stop", "is-active"):
            if not (UNIT_DIR / name).exists():
                print(f"Unit {name} could not be found.", file=sys.stderr)
                return 5
        if verb == "start" or (verb == "enable" and now):
            start(name)
        elif verb == "stop" or (verb == "disable" and now):
            stop(name)
        elif verb == "restart":
            stop(name)
            start(name)
        elif verb == "is-active":
            active = _pid(name) is not None
            print("active" if active else "inactive")
            if not active:
                return 3
        elif verb not in ("enable", "disable"):
            print(f"systemctl stand-in: unknown verb {verb}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
