"""``app``: the app served by Streamlit (``streamlit run`` on this installation's app.py), with the
app's own settings wherever it is started; ``--workers N`` runs N servers behind Caddy, supervised by
``cli/serve.py``."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def add_app(commands) -> None:
    a = commands.add_parser("app", help="serve the app (streamlit run on this installation's app.py); "
                                        "arguments after it go to streamlit, e.g. --server.port 8502")
    a.add_argument("--workers", type=int, metavar="N",
                   help="N server processes behind Caddy, which keeps each visitor on one; a worker that exits "
                        "is started again (a class: one a core); without it, one process, as `streamlit run app.py`")
    a.set_defaults(func=serve_app)


def app_settings(folder: Path) -> dict[str, str]:
    """The app's own Streamlit settings (``.streamlit/config.toml`` beside app.py: no usage
    statistics sent, a traceback never shown to a visitor, the upload limit) as the environment
    variables Streamlit reads (``server.maxUploadSize`` -> ``STREAMLIT_SERVER_MAX_UPLOAD_SIZE``).
    Streamlit reads that file only from the folder it is started in, which for an installed package
    is anywhere; a flag or a variable the user sets still wins."""
    import re
    import tomllib

    config = folder / ".streamlit" / "config.toml"
    if not config.is_file():
        return {}
    settings = {}
    for section, options in tomllib.loads(config.read_text()).items():
        for key, value in options.items():
            name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", f"{section}_{key}").upper()
            settings[f"STREAMLIT_{name}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return settings


def serve_app(args) -> int:
    """``streamlit run`` on the app.py of hierattn/home.py (the checkout's, or the one a wheel
    installed), with the app's settings from wherever it is started."""
    import subprocess

    from hierattn.home import home

    app = home() / "app.py"
    if not app.is_file():
        print(f"error: no app.py in {home()} (set HIERATTN_HOME to the folder that holds app.py and pages/)",
              file=sys.stderr)
        return 2
    for name, value in app_settings(home()).items():
        os.environ.setdefault(name, value)
    if args.workers is not None:
        from hierattn.cli.serve import serve

        return serve(app, args.workers, args.streamlit_arguments, dict(os.environ))
    command = [sys.executable, "-m", "streamlit", "run", str(app), *args.streamlit_arguments]
    if os.name == "posix":  # become the server: a signal (Ctrl+C, a service manager's stop) reaches it, no orphan
        sys.stdout.flush()
        os.execv(sys.executable, command)
    return subprocess.call(command)
