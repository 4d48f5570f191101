"""The Excel functions served by a real xlwings Server app (the `xlwings-server` package, 1.20), in process.

The app is built the way a deployment builds it: a project folder whose ``custom_functions`` package is
``from udfs.functions import *``, settings from environment variables, and FastAPI's test client posting the JSON the
Office.js client posts to ``/xlwings/custom-functions-call`` (xlwings_server/static/js/custom-functions/
custom-functions-code.js, ``base()``: every argument a 2-D matrix). What the cell then shows follows that script's
``makeServerCall`` and ``showError``: a 2xx is the result; otherwise it retries statuses in
``customFunctionsRetryCodes`` (500, 502, 503, 504) up to three attempts, then throws ``#VALUE!`` with the body as the
message on the error flag.

xlwings_server reads its settings once, at import, and registers one ``custom_functions`` module per process, so
it is imported in this module only.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
import xlwings

ENV = {
    "XLWINGS_ON_SERVER": "true",
    "XLWINGS_LICENSE_KEY": "noncommercial",  # xlwings PRO's PolyForm Noncommercial licence, for the tests
    "XLWINGS_ENVIRONMENT": "prod",
    "XLWINGS_FUNCTIONS_NAMESPACE": "XLWINGS",  # the package's default
    "XLWINGS_ENABLE_SOCKETIO": "false",  # only streaming functions need it
}
CALL = "/xlwings/custom-functions-call"
BAD = "LITTLES_LAW: arrival_rate_rps: got -40; expected a number of at least 0 [requests/s]"


@pytest.fixture(scope="session")  # once per worker: a stolen test of this file must not set it up a second time
def server(tmp_path_factory):
    if "xlwings_server" in sys.modules:
        pytest.fail("xlwings_server was imported before this module configured it")
    project = tmp_path_factory.mktemp("xlwings_server_project")
    (project / "custom_functions").mkdir()
    (project / "custom_functions" / "__init__.py").write_text("from udfs.functions import *  # noqa: F403\n")
    (project / "custom_scripts").mkdir()
    (project / "custom_scripts" / "__init__.py").write_text("")
    os.environ.update(ENV)
    os.environ["XLWINGS_PROJECT_DIR"] = str(project)  # xlwings_server puts it first on sys.path
    os.environ.pop("DOTENV_PATH", None)
    from fastapi.testclient import TestClient
    from xlwings_server import settings
    from xlwings_server.main import main_app

    # raise_server_exceptions=False: a 500 reaches the test as the response Excel would get
    return TestClient(main_app, raise_server_exceptions=False), settings


def body(func_name: str, *args) -> dict:
    return {"client": "Office.js", "func_name": func_name, "args": list(args), "caller_address": "[Book1.xlsx]Sheet1!A1",
            "session_id": "00000000-0000-0000-0000-000000000000", "culture_info_name": "en-US", "date_format": "M/d/yyyy",
            "version": xlwings.__version__, "runtime": "1.4"}


def what_the_cell_shows(client, settings, payload):
    """The client's retry loop and error display, in Python: (result or ('#VALUE!', message), attempts)."""
    retry = settings.jsconfig["customFunctionsRetryCodes"]
    tries = settings.jsconfig["customFunctionsMaxRetries"]
    for attempt in range(1, tries + 1):
        r = client.post(CALL, json=payload)
        if 200 <= r.status_code < 300:
            return r.json()["result"], attempt
        if attempt == tries or r.status_code not in retry:
            return ("#VALUE!", r.text), attempt
    raise AssertionError("unreachable")


@pytest.mark.slow
def test_a_good_call(server):
    client, _ = server
    r = client.post(CALL, json=body("littles_law", [[40]], [[15]]))
    # the runbook: 40 req/s x 15 s = 600 in flight
    assert (r.status_code, r.json()) == (200, {"result": [[600.0]]})


@pytest.mark.parametrize("environment", ["prod", "dev"])
def test_a_bad_argument_reaches_the_cell_with_our_message_and_is_not_retried(server, environment, monkeypatch):
    client, settings = server
    monkeypatch.setattr(settings, "environment", environment)
    r = client.post(CALL, json=body("littles_law", [[-40]], [[15]]))
    assert r.status_code == 400 and r.status_code != 500
    assert r.text == BAD
    assert 400 not in settings.jsconfig["customFunctionsRetryCodes"]
    assert what_the_cell_shows(client, settings, body("littles_law", [[-40]], [[15]])) == (("#VALUE!", BAD), 1)


def test_an_excel_error_in_a_cell_is_named_not_taken_as_blank(server):
    client, _ = server
    div0 = {"type": "Error", "basicType": "Error", "basicValue": "#DIV/0!", "errorType": "Div0"}
    r = client.post(CALL, json=body("time_in_system", [[300]], [[300]], [[0.05]], [[div0]]))
    assert r.status_code == 400
    assert r.text.startswith("TIME_IN_SYSTEM: output_p99: the cell holds #DIV/0!")


def test_a_row_answers_as_a_row_and_a_bad_cell_alone_is_an_error_value(server):
    client, _ = server
    r = client.post(CALL, json=body("littles_law", [[40, 80, -1]], [[15]]))
    assert r.json() == {"result": [[600.0, 1200.0, {"type": "Error", "errorType": "Value"}]]}


def test_fleet_over_a_column_is_a_row_per_input(server):
    client, _ = server
    r = client.post(CALL, json=body("fleet", [[4], [8]], [[4]], [[3]]))
    # the runbook: 4 for the load, 5 with N+1, a node of 8; 8 for the load: 9, two nodes (16)
    assert r.json() == {"result": [[4.0, 5.0, 8.0], [8.0, 9.0, 16.0]]}


def _manifest_namespace(manifest: str) -> str | None:
    m = re.search(r'<bt:String id="Functions.Namespace" DefaultValue="([^"]*)"', manifest)
    return m.group(1) if m else None


@pytest.mark.slow
@pytest.mark.parametrize("environment, namespace", [("prod", "XLWINGS"), ("dev", "XLWINGS"), ("prod", "")])
def test_the_workbook_calls_the_functions_by_the_names_the_manifest_registers(server, monkeypatch, environment, namespace):
    # `xlplan workbook --formulas udf --namespace NS` must write exactly the prefix the served manifest gives Excel
    from workbookhelp import build

    from xlplan.excel.common import UDF_NAMES
    from xlplan.io.planfile import reference_plan

    client, settings = server
    monkeypatch.setattr(settings, "environment", environment)
    monkeypatch.setattr(settings, "functions_namespace", namespace)
    manifest = client.get("/manifest").text
    served = _manifest_namespace(manifest) or ""
    meta = client.get("/xlwings/custom-functions-meta.json").json()
    assert {f["name"] for f in meta["functions"]} == UDF_NAMES  # every function, unprefixed in the metadata
    book = build(reference_plan(), formulas="udf", namespace=served)
    formulas = {c.value for s in book.sheets for c in s.cells.values() if c.formula}
    prefix = f"{served}." if served else ""
    assert f"={prefix}LITTLES_LAW(PeakRate,TimeInSystem)" in formulas
    # dev appends _DEV to the namespace, which is why the README sets XLWINGS_ENVIRONMENT=prod for users
    assert served == ("" if not namespace else namespace + ("_DEV" if environment == "dev" else ""))
