"""The demo page in a real browser: headless Chromium (Debian's package, `make install-browser`) under Selenium."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from blocks.demo.app import DemoApp
from blocks.demo.browser import CHROMEDRIVER, CHROMIUM, chromium
from blocks.demo.server import DemoServer

REPO = Path(__file__).resolve().parents[2]
CHECKPOINTS = REPO / "checkpoints"
INDEX = 3  # the board the test plays

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        (CHROMIUM is None or CHROMEDRIVER is None) and os.environ.get("BLOCKS_REQUIRE_BROWSER") != "1",
        reason="no chromium and chromedriver: run make install-browser (CI sets BLOCKS_REQUIRE_BROWSER=1)",
    ),
]


@pytest.fixture(scope="module")
def page(corpus_root):
    server = DemoServer(DemoApp(corpus_root, CHECKPOINTS), "127.0.0.1", 0)
    server.start_in_thread()
    browser = chromium()
    browser.implicitly_wait(0)
    browser.get(server.url)
    yield browser
    browser.quit()
    server.shutdown()
    server.server_close()


def eval_error(corpus_root: Path, tmp_path: Path, index: int) -> float:
    """What ``eval.py`` reports for example ``index`` of dev with the default agent (its episodes.csv)."""
    subprocess.run(
        [sys.executable, "eval.py", "agent=read_and_plan", f"agent.reader={CHECKPOINTS / 'ours' / 'board_reader.ckpt'}",
         f"agent.goal={CHECKPOINTS / 'ours' / 'goal_predictor.ckpt'}", "split=dev", f"limit={index + 1}", "progress=false",
         f"hydra.run.dir={tmp_path / 'eval'}"],
        cwd=REPO, env={**os.environ, "BLOCKS_DATA": str(corpus_root)}, check=True, capture_output=True, text=True,
    )  # fmt: skip
    with open(tmp_path / "eval" / "episodes.csv") as handle:
        return float(list(csv.DictReader(handle))[index]["error"])


def wait_for(browser, condition, seconds: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, seconds).until(lambda b: condition(b))


def text_of(browser, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, element_id).text


def test_one_episode_plays_and_shows_evals_error(page, corpus_root, tmp_path):
    from selenium.webdriver.common.by import By

    wait_for(page, lambda b: text_of(b, "title").startswith("board 0 "))  # the page opens on board 0
    assert page.find_element(By.ID, "agent").get_attribute("value") == "read_and_plan"
    index = page.find_element(By.ID, "index")
    index.clear()
    index.send_keys(str(INDEX))
    page.find_element(By.ID, "load").click()
    wait_for(page, lambda b: text_of(b, "title").startswith(f"board {INDEX} "))
    instruction = page.find_element(By.ID, "instruction").get_attribute("value")
    assert instruction and instruction == DemoApp(corpus_root, CHECKPOINTS).examples[INDEX].instruction
    page.find_element(By.ID, "run").click()
    wait_for(page, lambda b: "final error" in text_of(b, "result"))
    slider = page.find_element(By.ID, "slider")
    frames = int(slider.get_attribute("max")) + 1
    assert frames > 2 and not page.find_element(By.ID, "message").is_displayed()
    width = page.execute_script("return document.getElementById('frame').naturalWidth")
    assert width == 480  # drawn for a person at the display size
    seen = page.execute_script("return document.getElementById('agent-frame').naturalWidth")
    assert seen == 120 and text_of(page, "agent-caption").startswith(
        "what the agent sees: its own 120×120 picture"
    )
    wait_for(page, lambda b: text_of(b, "step").startswith(f"step {frames - 1} of {frames - 1}: STOP"), 30)
    shown = float(text_of(page, "result").split()[2])
    assert shown == round(eval_error(corpus_root, tmp_path, INDEX), 2)
    assert text_of(page, "badge") == "stopped by the agent" and "s on the server" in text_of(page, "latency")
    address = page.execute_script("return location.search")
    assert (
        f"board={INDEX}" in address and "agent=read_and_plan" in address and f"step={frames - 1}" in address
    )


def test_an_empty_instruction_is_a_message_and_the_page_goes_on(page):
    from selenium.webdriver.common.by import By

    page.find_element(By.ID, "tab-try").click()
    page.find_element(By.ID, "instruction").clear()
    page.find_element(By.ID, "run").click()
    wait_for(page, lambda b: b.find_element(By.ID, "message").is_displayed())
    assert text_of(page, "message").startswith("type an instruction")
    page.find_element(By.ID, "corpus").click()
    page.find_element(By.ID, "run").click()
    wait_for(page, lambda b: "final error" in text_of(b, "result"))
    assert not page.find_element(By.ID, "message").is_displayed()


def test_two_agents_side_by_side(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page.find_element(By.ID, "tab-compare").click()
    Select(page.find_element(By.ID, "agentA")).select_by_value("stop")
    Select(page.find_element(By.ID, "agentB")).select_by_value("read_and_plan")
    page.find_element(By.ID, "compare-run").click()
    wait_for(page, lambda b: "final error" in text_of(b, "resultB"))
    assert text_of(page, "resultA").startswith("final error") and text_of(page, "titleA").startswith("STOP")
    assert page.find_element(By.ID, "frameB").get_attribute("src").startswith("data:image/png")


def test_run_plays_the_board_typed_in_the_field_with_that_boards_words(page, corpus_root):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page.find_element(By.ID, "tab-try").click()
    Select(page.find_element(By.ID, "agent")).select_by_value("stop")
    index = page.find_element(By.ID, "index")
    index.clear()
    index.send_keys("7")  # no Show: Run must not mix board 7's number with the shown board's instruction
    page.find_element(By.ID, "run").click()
    wait_for(page, lambda b: "final error" in text_of(b, "result"))
    assert text_of(page, "title").endswith("board 7")
    words = page.find_element(By.ID, "instruction").get_attribute("value")
    assert words == DemoApp(corpus_root, CHECKPOINTS).examples[7].instruction
    assert text_of(page, "result").endswith("after 1 action")  # one action, not "1 actions"


def test_a_refused_run_leaves_no_earlier_episode_playing(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page.find_element(By.ID, "tab-try").click()
    Select(page.find_element(By.ID, "agent")).select_by_value("random")
    page.find_element(By.ID, "corpus").click()
    page.find_element(By.ID, "run").click()
    wait_for(page, lambda b: "final error" in text_of(b, "result"))
    page.find_element(By.ID, "instruction").clear()
    page.find_element(By.ID, "run").click()
    wait_for(page, lambda b: b.find_element(By.ID, "message").is_displayed())
    assert page.find_element(By.ID, "slider").get_attribute("disabled") == "true"
    assert page.find_element(By.ID, "play").get_attribute("disabled") == "true"
    assert text_of(page, "title").startswith("board ") and text_of(page, "step") == ""
    assert page.find_element(By.ID, "frame").get_attribute("src") == page.execute_script(
        "return state.board.image"
    )


def test_junk_in_the_board_field_is_a_message_not_board_0(page):
    from selenium.webdriver.common.by import By

    page.find_element(By.ID, "tab-try").click()
    page.execute_script("document.getElementById('index').value = '';")  # what a number field holds for 'abc'
    page.find_element(By.ID, "load").click()
    wait_for(page, lambda b: b.find_element(By.ID, "message").is_displayed())
    assert "not a whole number" in text_of(page, "message")


def test_the_notice_of_missing_checkpoints_stays_after_the_first_board(corpus_root, tmp_path):
    from selenium.webdriver.common.by import By

    server = DemoServer(DemoApp(corpus_root, tmp_path), "127.0.0.1", 0)  # an empty checkpoints folder
    server.start_in_thread()
    browser = chromium()
    try:
        browser.get(server.url)
        wait_for(browser, lambda b: text_of(b, "title").startswith("board 0 "))
        assert browser.find_element(By.ID, "missing").is_displayed()
        assert "read_and_plan:" in text_of(browser, "missing") and "not found" in text_of(browser, "missing")
    finally:
        browser.quit()
        server.shutdown()
        server.server_close()


def test_a_logo_board_shows_its_goal_and_its_logos_by_name_before_any_run(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page.find_element(By.ID, "tab-try").click()
    preset = next(
        b for b in page.find_elements(By.CSS_SELECTOR, "#presets button") if b.text.startswith("logos")
    )
    preset.click()
    wait_for(page, lambda b: "(logos" in text_of(b, "title"))
    assert text_of(page, "goal").startswith("The corpus's goal: move the ") and "pink ring" in text_of(
        page, "goal"
    )
    names = text_of(page, "logos")
    assert "Adidas" in names and "Heineken" in names
    assert page.execute_script("return document.getElementById('frame').src") == page.execute_script(
        "return state.board.image"
    )
    Select(page.find_element(By.ID, "view")).select_by_value(
        "release"
    )  # the release's cubes as the person's view
    wait_for(page, lambda b: b.execute_script("return state.board.view") == "release")
    assert "view=release" in page.execute_script("return location.search")
    Select(page.find_element(By.ID, "view")).select_by_value("flat")


def test_playback_steps_jumps_and_downloads(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page.find_element(By.ID, "tab-try").click()
    Select(page.find_element(By.ID, "agent")).select_by_value("random")
    page.find_element(By.ID, "seed").clear()
    page.find_element(By.ID, "seed").send_keys("3")
    page.find_element(By.ID, "run").click()
    wait_for(page, lambda b: "block lengths after" in text_of(b, "result"))
    page.find_element(By.ID, "play").click() if text_of(
        page, "play"
    ) == "Pause" else None  # stop the playback
    moves = page.find_elements(By.CSS_SELECTOR, "#moves li")
    moves[1].click()  # the second move: step 2
    assert text_of(page, "step").startswith("step 2 of ")
    page.find_element(By.ID, "prev").click()
    assert text_of(page, "step").startswith("step 1 of ")
    page.find_element(By.ID, "next").click()
    page.find_element(By.ID, "next").click()
    assert text_of(page, "step").startswith("step 3 of ") or len(moves) < 3
    Select(page.find_element(By.ID, "speed")).select_by_visible_text("4x")
    # Downloads: the page hands a file to the browser; here the hand-over is caught instead.
    page.execute_script(
        "window.saved = []; window.save = (blob, name) => window.saved.push([name, blob.type, blob.size]);"
    )
    page.find_element(By.ID, "download-json").click()
    page.find_element(By.ID, "download-gif").click()
    wait_for(page, lambda b: len(b.execute_script("return window.saved")) == 2, 60)
    saved = page.execute_script("return window.saved")
    assert saved[0][0].endswith("_seed3.json") and saved[0][1] == "application/json"
    assert saved[1][0].endswith(".gif") and saved[1][1] == "image/gif" and saved[1][2] > 1000
    assert text_of(page, "badge") in ("stopped by the agent", "hit the 40-step limit")


def test_a_link_reproduces_the_board_words_agent_and_step(corpus_root):
    from selenium.webdriver.common.by import By

    server = DemoServer(DemoApp(corpus_root, CHECKPOINTS), "127.0.0.1", 0)
    server.start_in_thread()
    browser = chromium()
    try:
        words = "move block 2 to the left of block 5"
        browser.get(
            f"{server.url}/?board=12&agent=stop&seed=4&instruction={words.replace(' ', '+')}&run=1&step=1"
        )
        wait_for(browser, lambda b: "action" in text_of(b, "result"))
        assert browser.find_element(By.ID, "index").get_attribute("value") == "12"
        assert browser.find_element(By.ID, "instruction").get_attribute("value") == words
        assert browser.find_element(By.ID, "agent").get_attribute("value") == "stop"
        assert text_of(browser, "title").startswith("STOP") and text_of(browser, "step").startswith(
            "step 1 of 1"
        )
        assert "no gold goal" in text_of(browser, "result")  # the typed words, not the corpus's
        browser.get(f"{server.url}/?board=2&tab=compare&a=stop&b=random&run=1")
        wait_for(browser, lambda b: "action" in text_of(b, "resultB"))
        assert text_of(browser, "titleA").startswith("STOP") and text_of(browser, "titleB").startswith(
            "RANDOM"
        )
    finally:
        browser.quit()
        server.shutdown()
        server.server_close()
