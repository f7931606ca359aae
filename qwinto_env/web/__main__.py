"""``python -m qwinto_env.web``: start the server and print its address (see
:mod:`qwinto_env.web`)."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from typing import Sequence

from ..console import command_exits, say
from ..opponents import split_specs
from .app import DEFAULT_MAX_GAMES, create_app
from .menu import DEFAULT_BOTS


def _port(text: str) -> int:
    if not text.isdecimal() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"must be an integer in 0..65535 (0: any free "
                                         f"port), got {text!r}")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdecimal() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def _names(text: str) -> list[str]:
    names = split_specs(text)
    if not all(names):
        raise argparse.ArgumentTypeError(f"must be comma-separated bot names, none empty, "
                                         f"got {text!r}")
    return names


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m qwinto_env.web",
        description="Serve a web page to play Qwinto (dice or cards) against bots.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this computer only)")
    p.add_argument("--port", type=_port, default=8000,
                   help="port to listen on (default 8000; 0 picks a free one)")
    p.add_argument("--bots", type=_names, default=list(DEFAULT_BOTS),
                   help=f"comma-separated bots the page may seat: names or checkpoint paths "
                        f"(default {','.join(DEFAULT_BOTS)})")
    p.add_argument("--max-games", type=_positive, default=DEFAULT_MAX_GAMES,
                   help=f"games held in memory at once; the least recently used finished "
                        f"one, else the least recently used, makes room (default "
                        f"{DEFAULT_MAX_GAMES})")
    p.add_argument("--access-log", action="store_true",
                   help="log every request (uvicorn's access log, on standard output)")
    return p


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port`` (OSError if it cannot be).

    It listens at once, before the bots load (seconds): a socket merely bound with
    SO_REUSEADDR leaves the port to a second server started meanwhile, and this one's
    uvicorn then failed with a traceback after printing the other's address.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen()
    except OSError:
        sock.close()
        raise
    return sock


def _address(host: str, port: int) -> str:
    """The line that tells the person where the page is. A wildcard host is no address a
    browser opens (Windows' refuse 0.0.0.0), nor one to give friends: say what is."""
    if ipaddress.ip_address(host.split("%")[0]).is_unspecified:
        local = "127.0.0.1" if "." in host else "[::1]"
        return (f"Qwinto: open http://{local}:{port}/ in a browser here; on other computers, "
                f"http://<this computer's address>:{port}/")
    shown = f"[{host}]" if ":" in host else host
    return f"Qwinto: open http://{shown}:{port}/ in a browser"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until Ctrl-C; the exit status (2 for bad arguments)."""
    import uvicorn

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        sock = _listen(args.host, args.port)
    except OSError as error:
        say(parser.prog, "error", f"cannot listen on {args.host}:{args.port}: {error}")
        return 2
    try:  # loading the networks takes seconds: Ctrl-C meanwhile is no traceback
        with command_exits(parser.prog):
            app = create_app(bots=args.bots, max_games=args.max_games)
    except BaseException as error:  # the port is free again whatever stopped the start
        sock.close()
        if not isinstance(error, ValueError):
            raise
        say(parser.prog, "error", error)
        return 2
    print(_address(*sock.getsockname()[:2]), flush=True)
    # Without --access-log, one line a move would fill a pipe nobody reads and stall the
    # server; what a person needs to see (the address, errors) goes out either way.
    uvicorn.Server(uvicorn.Config(app, log_level="info", access_log=args.access_log)
                   ).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
