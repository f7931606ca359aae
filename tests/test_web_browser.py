"""The web page end to end, as a person uses it: the real server (uvicorn) and a real
headless Chromium (Debian's chromium and chromedriver, driven by Selenium; nothing is
downloaded) play a whole dice game and a whole card game against the shipped pretrained
bots, and against each game's person-facing search, with the mouse. Checked: the totals
on the final table equal the scores of the downloaded record replayed in the PettingZoo
env; a reload in the middle resumes the same game; two tabs hold two games.

Skipped when /usr/bin/chromium or /usr/bin/chromedriver is missing, unless
``QWINTO_REQUIRE_BROWSER=1`` (then it fails). ``QWINTO_SCREENSHOTS=<folder>`` saves
``dice-end.png`` and ``cards-end.png`` there.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from qwinto_env.web import create_app, replay

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
BOTS = {"dice": "pretrained:dice-2p", "cards": "pretrained:cards-2p"}
SEARCHES = {"dice": "search[person]:pretrained:dice-2p-v2",
            "cards": "search[person]:pretrained:cards-2p-v2"}
CHROME_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1200,900")
SETTLED = ("idle", "ready", "done")
RELOAD_AT_MOVE = 6

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    if os.environ.get("QWINTO_REQUIRE_BROWSER") == "1":
        pytest.fail(f"QWINTO_REQUIRE_BROWSER=1 but {CHROMIUM} or {CHROMEDRIVER} is missing",
                    pytrace=False)
    pytest.skip(f"needs {CHROMIUM} and {CHROMEDRIVER} (Debian chromium, chromium-driver)",
                allow_module_level=True)

from selenium import webdriver  # noqa: E402  (only once the browser is known to exist)
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def app():
    return create_app(bots=sorted(BOTS.values()) + sorted(SEARCHES.values()))


@pytest.fixture(scope="module")
def server(app):
    """The base URL of a real uvicorn server serving ``app`` on a free localhost port."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/"
    uv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def browser(tmp_path):
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download a driver
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS + (f"--user-data-dir={tmp_path / 'profile'}",):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    yield driver
    driver.quit()


# -- what a person sees and does ---------------------------------------------------------

def page_state(driver) -> str:
    return driver.find_element(By.TAG_NAME, "body").get_attribute("data-state")


def settle(driver) -> str:
    WebDriverWait(driver, 60).until(lambda d: page_state(d) in SETTLED)
    return page_state(driver)


def by_testid(driver, testid: str):
    return driver.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')


def start_game(driver, base: str, game: str, seed: int, bot: str | None = None) -> str:
    """Open the page, choose ``game`` for 2 players against ``bot`` (its pretrained bot
    unless given), start; the game id the URL now holds."""
    driver.get(base)
    assert settle(driver) == "idle"
    Select(by_testid(driver, "game-select")).select_by_value(game)
    Select(by_testid(driver, "players-select")).select_by_value("2")
    Select(by_testid(driver, "bot-select-1")).select_by_value(bot or BOTS[game])
    by_testid(driver, "seed-input").send_keys(str(seed))
    by_testid(driver, "start").click()
    assert settle(driver) == "ready"
    game_id = driver.current_url.split("?game=")[1]
    assert game_id
    return game_id


def click_a_move(driver, rng: random.Random) -> None:
    moves = driver.find_elements(By.CSS_SELECTOR, '[data-testid="legal-move"]')
    assert moves, "a game in progress must show the person a legal move"
    writes = [m for m in moves if m.get_attribute("data-kind") == "write"]
    # mostly a field when there is one, as a person would (random clicks misthrow at once)
    rng.choice(writes if writes and rng.random() < 0.9 else moves).click()
    settle(driver)


def snapshot(driver) -> dict:
    """The step, the sheets and the log as the page shows them."""
    return {"url": driver.current_url,
            "step": driver.find_element(By.TAG_NAME, "body").get_attribute("data-step"),
            "sheets": by_testid(driver, "sheets").text,
            "log": by_testid(driver, "log").text}


def download_record(driver) -> dict:
    href = by_testid(driver, "record-link").get_attribute("href")
    with urllib.request.urlopen(href, timeout=30) as answer:
        assert "attachment" in answer.headers["Content-Disposition"]
        return json.load(answer)


def save_screenshot(driver, game: str) -> None:
    folder = os.environ.get("QWINTO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.execute_script("window.scrollTo(0, 0)")  # clicking scrolled to the sheets
        driver.save_screenshot(str(Path(folder) / f"{game}-end.png"))


# -- the test ------------------------------------------------------------------------------

@pytest.mark.parametrize("game,bot", [(g, BOTS[g]) for g in sorted(BOTS)]
                         + [(g, SEARCHES[g]) for g in sorted(SEARCHES)])
def test_whole_game_in_the_browser(server, browser, game, bot):
    rng = random.Random(f"web-{game}" if bot == BOTS[game] else f"web-{bot}")
    game_id = start_game(browser, server, game, seed=rng.randrange(10**6), bot=bot)
    by_testid(browser, "fast").click()
    moves = 0
    while page_state(browser) != "done":
        click_a_move(browser, rng)
        moves += 1
        if moves == RELOAD_AT_MOVE:
            assert not by_testid(browser, "record-link").is_displayed()  # 409 till the end
            check_reload_resumes(browser, game_id)
            check_second_tab(browser, server, game, game_id, rng)
    totals = [int(by_testid(browser, f"final-total-{seat}").text) for seat in range(2)]
    if bot == BOTS[game]:
        save_screenshot(browser, game)  # docs/web's pictures are of the pretrained bots
    record = download_record(browser)
    assert (record["game"], record["num_players"], record["done"]) == (game, 2, True)
    assert record["players"] == ["you", bot]
    assert totals == replay(record).game.scores()  # the engine's, not the server's word


def check_reload_resumes(driver, game_id: str) -> None:
    before = snapshot(driver)
    driver.refresh()
    assert settle(driver) == "ready"
    assert snapshot(driver) == before
    assert driver.current_url.endswith(f"?game={game_id}")


def check_second_tab(driver, base: str, game: str, game_id: str, rng: random.Random) -> None:
    """A second tab starts and plays its own game; the first tab's game is untouched."""
    first, before = driver.current_window_handle, snapshot(driver)
    driver.switch_to.new_window("tab")
    other_id = start_game(driver, base, game, seed=rng.randrange(10**6))
    assert other_id != game_id
    click_a_move(driver, rng)
    driver.switch_to.window(first)
    driver.refresh()
    assert settle(driver) == "ready"
    assert snapshot(driver) == before


def test_a_stale_tab_shows_the_error_and_the_game_as_it_is(server, browser):
    rng = random.Random("stale")
    start_game(browser, server, "dice", seed=7)
    url, first = browser.current_url, browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(url)
    assert settle(browser) == "ready"
    click_a_move(browser, rng)
    now = snapshot(browser)
    browser.switch_to.window(first)
    click_a_move(browser, rng)  # chosen at the old step
    assert "stale" in by_testid(browser, "error").text
    assert snapshot(browser)["step"] == now["step"]
    assert snapshot(browser)["sheets"] == now["sheets"]


def test_a_seed_is_sent_as_typed(app, server, browser):
    """Seeds above 2**53, which a JavaScript number would round, reach the server exactly
    (the state shows none till the end); one that is not a whole number is refused on the
    page, naming it."""
    for seed in (2**53 + 1, 2**63 - 1):
        game_id = start_game(browser, server, "dice", seed=seed)
        assert app.state.store.get(game_id).table_seed == seed
    browser.get(server)
    assert settle(browser) == "idle"
    by_testid(browser, "seed-input").send_keys("1e3")
    by_testid(browser, "start").click()
    assert settle(browser) == "idle"
    assert "seed 1e3: type a whole number" in by_testid(browser, "error").text


def test_an_unknown_game_id_offers_a_new_game(server, browser):
    browser.get(server + "?game=no-such-game")
    assert settle(browser) == "idle"
    assert "no-such-game" in by_testid(browser, "error").text
    assert by_testid(browser, "start").is_displayed()
