"""Working through the review queue in Chromium: one app and one browser for the module.

The project of test_serve_queue.py (two real runs; `turns` regressed, `wobbly` uncertain, `close`
borderline, `softclose` soft). A reviewer opens the first item, walks the queue with j/k, goes back
to the queue at the same place, reviews an item and lands on the next one; a reload shows the saved
review in its form; a saved review updates the verdict line in place; a `c` can be taken back.
"""

from __future__ import annotations

import json

from test_report_browser import browser  # noqa: F401 - the fixture, shared with the report's tests
from test_serve_queue import case, world  # noqa: F401 - the module's project, built once here too

QUEUE = ["turns", "wobbly", "close", "softclose"]


def _focused(page) -> dict:
    return page.evaluate(
        """() => { const el = document.activeElement; const check = el.closest('.check');
        return {name: el.name, form: el.form ? (el.form.id || null) : null,
                check: check ? check.dataset.check : null}; }"""
    )


def _in_view(page, selector: str) -> bool:
    return page.evaluate(
        """(s) => { const r = document.querySelector(s).getBoundingClientRect();
        return r.bottom > 0 && r.top < window.innerHeight; }""",
        selector,
    )


def _reviews(world) -> list[dict]:  # noqa: F811 - the fixture's value
    path = world["folder"] / ".specengine" / "reviews.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_in_a_browser_a_reviewer_works_through_the_queue(world, page_at):  # noqa: F811
    url = world["app"].url
    page = page_at(1280, 600)
    page.goto(f"{url}/queue")
    assert [row.get_attribute("id") for row in page.locator("tr.queueitem").all()] == [
        f"queue-item-{n}" for n in range(1, 5)
    ]
    page.click("#queue-item-1 a.caselink")
    page.wait_for_load_state()
    assert "queue=1" in page.url and page.locator("h1.casetitle").inner_text().endswith("turns")
    assert page.locator("#queue-position").inner_text() == "item 1 of 4"
    assert _focused(page) == {"name": "verdict", "form": "case-review-form", "check": None}

    # j/k walk the queue, not the run's cases; a check item opens at its check, its form focused
    page.keyboard.press("j")
    page.wait_for_url("**id=spec.yaml%3A%3Awobbly*")
    page.wait_for_load_state()
    assert page.locator("#queue-position").inner_text().startswith("item 2 of 4 · check")
    wobbly_check = page.locator("main").get_attribute("data-queue-check")
    assert _focused(page) == {"name": "verdict", "form": None, "check": wobbly_check}
    assert _in_view(page, f'.check[data-check="{wobbly_check}"] details.checkreview')
    page.keyboard.press("k")
    page.wait_for_url("**id=spec.yaml%3A%3Aturns*")
    page.wait_for_load_state()
    page.click("#back-to-queue")
    page.wait_for_url("**/queue?page=1#queue-item-1")

    # reviewing the item moves on to the next one, now in its place
    page.click("#queue-item-2 a.caselink")
    page.wait_for_load_state()
    form = page.locator(f'.check[data-check="{wobbly_check}"] form.reviewform')
    form.locator('input[value="correct"]').check()
    form.locator('button[type="submit"]').click()
    page.wait_for_url("**id=spec.yaml%3A%3Aclose*")
    page.wait_for_load_state()
    assert page.locator("#queue-position").inner_text().startswith("item 2 of 3")
    assert (
        page.locator("#queue-prev")
        .get_attribute("href")
        .startswith(f"/runs/{world['second']}/case?id=spec.yaml%3A%3Aturns&queue=1")
    )

    # the saved review shows in its form after a reload
    page.goto(f"{url}/runs/{world['second']}/case?id=spec.yaml%3A%3Awobbly")
    form = page.locator(f'.check[data-check="{wobbly_check}"] form.reviewform')
    assert form.locator('input[value="correct"]').is_checked()
    assert form.locator(".saved").text_content() == "saved: correct by Test Reviewer"


def test_in_a_browser_the_verdict_line_updates_in_place_and_c_can_be_undone(world, page_at):  # noqa: F811
    url, run = world["app"].url, world["second"]
    page = page_at(1280, 800)
    page.goto(f"{url}/runs/{run}/case?id=spec.yaml%3A%3Asteady")
    page.wait_for_load_state()
    assert "not reviewed" in page.locator("#verdicts").inner_text()
    form = page.locator("#case-review-form")
    form.locator('input[value="incorrect"]').check()
    form.locator('button[type="submit"]').click()
    page.locator("#verdicts").filter(has_text="overridden: human says failed").wait_for()

    page.goto(f"{url}/runs/{run}/case?id=spec.yaml%3A%3Aalpha")
    page.wait_for_load_state()
    before = len(_reviews(world))
    page.keyboard.press("c")
    saved = page.locator("#case-review-form .saved")
    assert saved.inner_text().startswith("marked correct; saving in 4 s")
    page.keyboard.press("u")
    assert saved.inner_text() == "undone: nothing saved"
    assert not page.locator('#case-review-form input[value="correct"]').is_checked()
    page.keyboard.press("i")
    page.keyboard.press("j")  # leaving the page saves the mark still pending
    page.wait_for_url("**id=spec.yaml%3A%3Abeta*")
    added = _reviews(world)[before:]
    assert [(r["case"], r["check"], r["verdict"]) for r in added] == [(case("alpha"), None, "incorrect")]


def test_in_a_browser_the_key_list_names_only_the_keys_a_page_answers(world, page_at):  # noqa: F811
    url, run = world["app"].url, world["second"]
    page = page_at(1280, 800)

    def listed() -> list[str]:
        page.keyboard.press("?")
        keys = page.locator("#keys")
        assert keys.is_visible()
        shown = [k.inner_text() for k in keys.locator("dt kbd").all() if k.is_visible()]
        page.keyboard.press("Escape")
        return shown

    page.goto(f"{url}/queue")
    page.wait_for_load_state()
    assert listed() == ["?"]
    page.goto(f"{url}/runs/{run}")
    page.wait_for_load_state()
    assert listed() == ["j", "k", "Enter", "/", "?"]
    page.goto(f"{url}/runs/{run}/case?id=spec.yaml%3A%3Asteady")
    page.wait_for_load_state()
    assert listed() == ["j", "k", "c", "i", "u", "/", "?"]


def test_in_a_browser_compare_says_why_it_is_off_for_five_runs(world, page_at):  # noqa: F811
    runs = world["folder"] / ".specengine" / "runs"  # three more runs: copies of the second
    second = json.loads((runs / f"{world['second']}.json").read_text(encoding="utf-8"))
    for number in range(3):
        copy = {**second, "run_id": f"c0ffee0{number}", "started_at": f"2000-01-0{number + 1}T00:00:00Z"}
        (runs / f"copy{number}.json").write_text(json.dumps(copy), encoding="utf-8")
    page = page_at(1280, 800)
    page.goto(world["app"].url + "/")
    page.wait_for_load_state()
    boxes = page.locator('input[name="run"]')
    assert boxes.count() == 5
    boxes.nth(0).check()
    assert page.locator("#compare-count").inner_text() == "1 run selected: select one more"
    for index in range(1, 5):
        boxes.nth(index).check()
    assert page.locator("#compare-button").is_disabled()
    assert page.locator("#compare-count").inner_text() == "5 runs selected: compare takes at most four"
    boxes.nth(4).uncheck()
    assert page.locator("#compare-button").is_enabled()


def test_a_case_review_and_a_check_review_that_disagree_are_said_to(world):  # noqa: F811
    client, run, url = world["app"].client, world["second"], world["app"].url
    check = next(c["name"] for c in client.get(f"/api/runs/{run}").json()["cases"][3]["checks"])
    assert client.get(f"/api/runs/{run}").json()["cases"][3]["id"] == case("close")
    for body in ({"check": check, "verdict": "incorrect"}, {"check": None, "verdict": "correct"}):
        answer = client.post(
            f"/api/runs/{run}/reviews", json={"case": case("close"), **body}, headers={"Origin": url}
        )
        assert answer.status_code == 201, answer.text
    page = client.get(f"/runs/{run}/case", params={"id": case("close")}).text
    assert (
        '<dd id="review-conflict">The case review says it passed, and decides its outcome; the review of'
        f" “{check}” says a gate failed, and counts for judge agreement.</dd>"
    ) in page
    alone = client.get(f"/runs/{run}/case", params={"id": case("steady")}).text
    assert 'id="review-conflict"' not in alone
