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

REPO = Path(__file__).resolve().parents[1]
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
        [sys.executable, "eval.py", "agent=read_and_plan", f"agent.reader={CHECKPOINTS / 'board_reader.ckpt'}",
         f"agent.goal={CHECKPOINTS / 'goal_predictor.ckpt'}", "split=dev", f"limit={index + 1}", "progress=false",
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
    assert width == 480  # the agent's 120-pixel picture, four times as large
    wait_for(page, lambda b: text_of(b, "step").startswith(f"step {frames - 1} of {frames - 1}: STOP"), 30)
    shown = float(text_of(page, "result").split()[2])
    assert shown == round(eval_error(corpus_root, tmp_path, INDEX), 2)


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
