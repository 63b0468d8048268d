"""The panel's "Install packages" section: what it sends for what the user typed, and when
it shows (the REST route and the browser test exercise the install itself)."""

from __future__ import annotations

from codeagent_jupyter.widget.install_box import InstallBox, split_names


def test_names_split_on_spaces_and_commas_keeping_versions() -> None:
    assert split_names(" statsmodels, scikit-learn >= 1.4  numpy==2 ") == [
        "statsmodels",
        "scikit-learn>=1.4",
        "numpy==2",
    ]
    assert split_names(" , ") == []


class _Panel:
    client = None
    session_id = None

    def __init__(self) -> None:
        self.ran: list[str] = []

    def run(self, key: str, coro) -> None:
        self.ran.append(key)
        coro.close()


def test_shown_once_a_session_exists_and_off_while_a_run_goes() -> None:
    panel = _Panel()
    box = InstallBox(panel)
    assert box.widget.layout.display == "none"
    box.sync(started=True, running=True, busy=False)
    assert box.widget.layout.display == "" and box.button.disabled
    box.sync(started=True, running=False, busy=False)
    assert not box.button.disabled
    box.button.click()  # nothing typed: a hint, no request
    assert panel.ran == [] and 'data-error="true"' in box.result.value
    box.names.value = "tinyapp"
    box.button.click()
    assert panel.ran == ["install"]
    box.offered = False  # a session whose server has installs off
    box.sync(started=True, running=False, busy=False)
    assert box.widget.layout.display == "none"
