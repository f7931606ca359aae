"""The FastAPI application: :func:`create_app` (the API is documented in
:mod:`qwinto_env.web`)."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Annotated, Any, Sequence

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import rules
from ..parallel import GAMES
from ..spec import SPECS
from .menu import DEFAULT_BOTS, BotMenu
from .session import BotFailure, MoveError, WebGame
from .store import GameStore, UnknownGameError

__all__ = ["create_app", "STATIC", "MAX_BODY_BYTES", "MAX_SEED", "DEFAULT_MAX_GAMES"]

#: The page's files (index.html, app.js, style.css).
STATIC = Path(__file__).resolve().parent / "static"
#: Larger request bodies are refused with 413 (a real one is under 200 bytes).
MAX_BODY_BYTES = 16_384
#: Seeds the server takes: 0..MAX_SEED; the seeds it draws stay below 2**32.
MAX_SEED = 2**63 - 1
DEFAULT_MAX_GAMES = 200
_MAX_PLAYERS = max(spec.max_players for spec in SPECS.values())
_Name = Annotated[str, Field(max_length=200)]


class NewGame(BaseModel):
    """The body of ``POST /api/games``."""
    model_config = ConfigDict(extra="forbid", strict=True)
    game: str = Field(max_length=32)
    num_players: int  # unbounded here: the game's check names the game's own range
    bots: list[_Name] = Field(default_factory=list, max_length=_MAX_PLAYERS - 1)
    seat: int = Field(0, ge=0, lt=_MAX_PLAYERS)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    start_player: int = Field(0, ge=0, lt=_MAX_PLAYERS)


class Move(BaseModel):
    """The body of ``POST /api/games/{id}/move``."""
    model_config = ConfigDict(extra="forbid", strict=True)
    action: int = Field(ge=0, le=2**31)
    step: int = Field(ge=0, le=2**31)


class _BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets 413 with a JSON detail
    (FastAPI's own ``max_body_size`` answers a declared oversize in plain text)."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app, self.limit = app, limit
        self.detail = f"the request body is over {limit} bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = Headers(scope=scope).get("content-length", "0")
        if not length.isdecimal() or int(length) > self.limit:
            return await JSONResponse({"detail": self.detail}, 413)(scope, receive, send)
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:  # a body sent in chunks, without a length
                raise HTTPException(413, self.detail)
            return message

        await self.app(scope, limited, send)


def _problem(problem: dict[str, Any], content_type: str) -> dict[str, Any]:
    """A schema problem as ``{"type", "loc", "msg"}``; a body that was not read as JSON
    for its Content-Type says so (FastAPI reads only ``application/json`` and ``+json``)."""
    out = {key: problem[key] for key in ("type", "loc", "msg")}
    if out["type"] == "model_attributes_type" and tuple(out["loc"]) == ("body",) \
            and "json" not in content_type.lower():
        sent = f"this request's: {content_type[:80]!r}" if content_type else "none was sent"
        out["msg"] = ("the body was not read as JSON: send it with Content-Type: "
                      f"application/json ({sent})")
    return out


def _unreadable(cause: BaseException) -> str:
    """Why the JSON parser gave up on a body, for the 400's detail."""
    if isinstance(cause, UnicodeDecodeError):
        return f"the request body is not UTF-8 text ({cause.reason} at byte {cause.start})"
    if isinstance(cause, RecursionError):
        return "the request body is nested too deep for the JSON parser"
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return "the request body holds an integer of more digits than the JSON parser takes"
    return f"the request body cannot be read as JSON ({type(cause).__name__})"


def _options(menu: BotMenu) -> dict[str, Any]:
    return {
        "games": {name: {"title": spec.title, "min_players": spec.min_players,
                         "max_players": spec.max_players} for name, spec in SPECS.items()},
        "bots": menu.as_json(),
        "layout": {"rows": list(rules.ROW_NAMES), "fields": rules.NUM_FIELDS,
                   "grid_columns": rules.NUM_GRID_COLUMNS,
                   "field_columns": [list(c) for c in rules.FIELD_COLUMNS],
                   "gap_columns": list(rules.GAP_COLUMNS),
                   "pentagons": [r * rules.NUM_FIELDS + f for r, f in rules.PENTAGON_FIELDS],
                   "max_misthrows": rules.MAX_MISTHROWS}}


def _new_game(menu: BotMenu, body: NewGame, game_id: str) -> WebGame:
    """The game ``body`` asks for; ValueError naming the first bad field."""
    if body.game not in GAMES:
        raise ValueError(f"unknown game {body.game[:32]!r}; choose one of {sorted(GAMES)}")
    n = SPECS[body.game].check_num_players(body.num_players)
    bots = menu.seat_bots(body.game, n, body.bots)
    seed = secrets.randbelow(2**32) if body.seed is None else body.seed
    return WebGame(game_id, body.game, n, bots, seat=body.seat, seed=seed,
                   start_player=body.start_player, make=menu.make)


def create_app(bots: Sequence[str] = DEFAULT_BOTS,
               max_games: int = DEFAULT_MAX_GAMES) -> FastAPI:
    """The server's app, offering the bots named ``bots`` (each loaded once per game and
    player count here; every new game gets a copy) and holding at most ``max_games`` games.

    ValueError naming a bot that loads nowhere, ``bots`` that is no list of names (a
    string), or a bad ``max_games``.
    """
    menu, store = BotMenu(bots), GameStore(max_games)
    app = FastAPI(title="Qwinto", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(_BodyLimit, limit=MAX_BODY_BYTES)
    app.state.menu, app.state.store = menu, store
    if STATIC.is_dir():  # (a missing folder would make every /static request a 500)
        app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        # FastAPI's own answer echoes the input, which fails to encode for 1e400 (inf):
        # a 500. Where and what is enough.
        kind = request.headers.get("content-type", "")
        return JSONResponse({"detail": [_problem(p, kind) for p in error.errors()]},
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        if error.status_code == 400 and error.__cause__ is not None:  # FastAPI's parser
            return JSONResponse({"detail": _unreadable(error.__cause__)}, status_code=400)
        return await http_exception_handler(request, error)

    @app.exception_handler(BotFailure)
    async def bot_failed(request: Request, error: BotFailure) -> JSONResponse:
        # the server's fault, not the request's: the page shows the detail, the log the
        # bot's traceback (Starlette's own 500 says "Internal Server Error" in plain text)
        logging.getLogger("uvicorn.error").error("%s", error, exc_info=error.__cause__)
        return JSONResponse({"detail": str(error)}, status_code=500)

    # HEAD too: what `curl -I` and uptime checks send (its files under /static take it)
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        if not (STATIC / "index.html").is_file():
            raise HTTPException(404, "the page is not installed (static/index.html is missing)")
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.include_router(_api(menu, store))
    return app


def _api(menu: BotMenu, store: GameStore) -> APIRouter:
    """The ``/api`` routes. Those that run bots are plain functions, which FastAPI runs in
    worker threads; the others answer on the event loop and never wait for a bot."""
    api, options = APIRouter(prefix="/api"), _options(menu)

    @api.get("/options")
    async def get_options() -> dict[str, Any]:
        return options

    @api.post("/games", status_code=201)
    def create_game(body: NewGame) -> JSONResponse:
        try:
            game = store.add(lambda game_id: _new_game(menu, body, game_id))
        except ValueError as error:
            raise HTTPException(422, str(error)) from None
        return JSONResponse(game.state(), status_code=201)

    @api.get("/games/{game_id}")
    async def get_game(game_id: str) -> JSONResponse:
        return JSONResponse(_held(store, game_id).state())

    @api.post("/games/{game_id}/move")
    def move(game_id: str, body: Move) -> JSONResponse:
        game = _held(store, game_id)
        try:
            return JSONResponse(game.move(body.action, body.step))
        except MoveError as error:
            raise HTTPException(error.status, str(error)) from None

    @api.get("/games/{game_id}/record")
    async def get_record(game_id: str) -> JSONResponse:
        game = _held(store, game_id)
        record = game.record()
        if record is None:
            raise HTTPException(409, f"game {game.id} is not over: its record (the seeds, "
                                     f"every seat's actions) would reveal the dice or cards "
                                     f"to come; download it when the game ends")
        name = f"qwinto-{game.game.name}-{game.id}.json"
        return JSONResponse(record,
                            headers={"Content-Disposition": f'attachment; filename="{name}"'})

    return api


def _held(store: GameStore, game_id: str) -> WebGame:
    try:
        return store.get(game_id)
    except UnknownGameError as error:
        raise HTTPException(404, str(error)) from None
