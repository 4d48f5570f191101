"""The plan file's version (docs/versioning.md): a file without ``schema_version`` is version 1 and reads unchanged, a
newer or malformed version is refused in one line, every writer writes the current version, and an older version is
migrated through the registry before the plan is validated (shown with a synthetic migration, as version 1 has none).
"""

import re
from pathlib import Path
from types import MappingProxyType

import pytest
import yaml

from xlplan.cli import main
from xlplan.decide import planner
from xlplan.io.planfile import plan_from_pairs, plan_to_yaml, read_plan, reference_plan, reference_plan_text
from xlplan.schema import versions
from xlplan.schema.decisions import CapacityOut, ScheduleOut
from xlplan.schema.diff import PlanDiff
from xlplan.schema.plan import Plan
from xlplan.schema.result import PlanOutput
from xlplan.schema.review import ReviewOut

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = yaml.safe_load(reference_plan_text())


def _write(tmp_path: Path, data, name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _without_version(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "schema_version"}


def _never_planned(*_, **__):
    raise AssertionError("planned: the refusal should come before any computation (benchmarks/bench_refusals.py times it)")


def _refusal(tmp_path, capsys, data) -> tuple[Path, str]:
    """The plan command on ``data`` as a file: (its path, its one error line), checking exit 2, no traceback, one line
    and that nothing was planned."""
    path = _write(tmp_path, data)
    with pytest.MonkeyPatch.context() as mp:  # refused before anything is computed: planning would fail the test
        mp.setattr(planner, "plan", _never_planned)
        rc = main(["plan", "--no-verify", str(path)])
    err = capsys.readouterr().err
    assert rc == 2, err  # bad input: the exit status every refusal of a user's file has
    assert "Traceback" not in err and err.count("\n") == 1, err  # one line, no traceback
    line = err.strip()
    assert line.startswith(f"error: {path}: schema_version: got "), line  # names the file, then the field and value
    return path, line


def test_the_current_version_is_1_with_no_migrations():
    # version 1 is the layout of every file written before versions existed: there is nothing older to migrate from
    assert versions.PLAN_SCHEMA_VERSION == 1
    # one migration for each step from 1 to the current version, and no other: a gap would leave a version unreadable
    assert set(versions.PLAN_MIGRATIONS) == set(range(1, versions.PLAN_SCHEMA_VERSION))


def test_a_file_without_a_version_is_version_1_and_reads_as_before(tmp_path, capsys):
    path = _write(tmp_path, _without_version(REFERENCE))
    plan = read_plan(path)
    # absent means the current version 1: every plan file written before versions existed is valid as it is
    assert plan.schema_version == 1
    # and it is the same plan as the reference, which states the version: the key changes nothing else
    assert plan == reference_plan()
    # nothing migrated, so no note: a version-1 file without the key is not an older file
    assert capsys.readouterr().err == ""


def test_a_file_stating_version_1_reads(tmp_path, capsys):
    path = _write(tmp_path, {**REFERENCE, "schema_version": 1})
    # the explicit current version reads as the plan it states
    assert read_plan(path).schema_version == 1
    # and the plan command plans it (exit 0), saying nothing about its version
    assert main(["plan", "--no-verify", str(path)]) == 0
    assert "schema_version" not in capsys.readouterr().err


def test_a_newer_version_is_refused_in_one_line_that_says_upgrade(tmp_path, capsys):
    _, line = _refusal(tmp_path, capsys, {**REFERENCE, "schema_version": 99})
    # the value, what this xlplan reads, and the fix, in the one line
    assert "got 99; this xlplan reads plan-file version 1" in line, line
    assert "written by a newer xlplan; upgrade xlplan: pip install -U xlplan" in line, line


def test_a_newer_file_is_refused_for_its_version_before_its_fields_are_read(tmp_path, capsys):
    # a newer layout may hold fields this xlplan does not know and paths it should not open: the version line alone,
    # not an unknown-field line, a missing config.json or a section named wrongly
    newer = {**REFERENCE, "schema_version": 2, "fleet_policy": {"spares": 2},
             "model": {"config": "no/such/config.json"}, "forecast": {"peak_rps": -1}}
    _, line = _refusal(tmp_path, capsys, newer)
    assert "got 2;" in line and "pip install -U xlplan" in line, line


@pytest.mark.parametrize("value", ["two", 0, -1, 1.5, True, None, "1"])
def test_a_version_that_is_not_a_whole_number_from_1_is_refused(tmp_path, capsys, value):
    _, line = _refusal(tmp_path, capsys, {**REFERENCE, "schema_version": value})
    # the value as written, then what a version is: text, a fraction, a yes/no or a blank is no version
    assert f"got {value!r}; expected a whole number from 1" in line, line


def test_validating_a_mapping_directly_checks_the_version_too():
    # Plan's before-validator runs the same check, so a mapping that reaches the model by another route than a file
    # (a script, the workbook reader) is refused alike rather than read as this version
    with pytest.raises(ValueError, match="schema_version: got 99; .*newer xlplan"):
        Plan.model_validate({**REFERENCE, "schema_version": 99})


def test_plan_to_yaml_writes_the_current_version_first_and_reads_back(tmp_path):
    text = plan_to_yaml(reference_plan())
    # the first line says which layout the file is written in
    assert text.splitlines()[0] == f"schema_version: {versions.PLAN_SCHEMA_VERSION}"
    path = tmp_path / "plan.yaml"
    path.write_text(text, encoding="utf-8")
    # and what it writes reads back as the same plan
    assert read_plan(path) == reference_plan()


def _writers(tmp_path: Path) -> dict[str, list[str]]:
    """Every command that writes a plan file, with -o into tmp_path."""
    return {
        "example": ["example", "-o", str(tmp_path / "example.yaml")],
        "read": ["read", str(ROOT / "workbook" / "capacity-plan.xlsx"), "-o", str(tmp_path / "read.yaml")],
        "calibrate": ["calibrate", str(ROOT / "examples" / "bench" / "vllm-c64.json"), "-o", str(tmp_path / "calibrate.yaml")],
        "traffic": ["traffic", str(ROOT / "examples" / "logs" / "openai-usage.jsonl"), "--plan",
                    str(ROOT / "examples" / "reference-plan.yaml"), "-o", str(tmp_path / "traffic.yaml")],
    }


@pytest.mark.parametrize("writer", ["example", "read", "calibrate", "traffic"])
def test_every_plan_writer_writes_the_current_version_and_it_reads_back(tmp_path, capsys, writer):
    if writer == "traffic":
        pytest.importorskip("pandas")
    args = _writers(tmp_path)[writer]
    assert main(args) == 0, capsys.readouterr().err  # the command runs
    written = Path(args[args.index("-o") + 1])
    data = yaml.safe_load(written.read_text(encoding="utf-8"))
    # the file says what it is: the current version, at its top
    assert next(iter(data)) == "schema_version" and data["schema_version"] == versions.PLAN_SCHEMA_VERSION
    # and it reads back as a plan of that version, with no note (nothing migrated)
    capsys.readouterr()
    assert read_plan(written).schema_version == versions.PLAN_SCHEMA_VERSION
    assert "read as version" not in capsys.readouterr().err


def test_the_reference_plan_and_its_example_copy_state_the_current_version():
    # `xlplan example` prints the packaged reference plan, and examples/reference-plan.yaml is that text: both carry
    # the current version, so the starting point every user copies says what it is
    for text in (reference_plan_text(), (ROOT / "examples" / "reference-plan.yaml").read_text(encoding="utf-8")):
        assert yaml.safe_load(text)["schema_version"] == versions.PLAN_SCHEMA_VERSION


def test_the_published_schema_bounds_the_version_by_the_current_one():
    prop = Plan.model_json_schema()["properties"]["schema_version"]
    # an editor validating against docs/plan.schema.json flags a file from a newer xlplan, as xlplan itself does
    assert (prop["minimum"], prop["maximum"], prop["default"]) == (1, versions.PLAN_SCHEMA_VERSION, 1)


def test_a_spreadsheet_plan_table_may_state_the_version_as_a_number():
    # a cell holds 1 as the float 1.0: read as the whole number it is, as gpus_per_node and tp are
    assert plan_from_pairs([["schema_version", 1.0]]).schema_version == 1
    # a newer version in a table is refused like a newer file's, at the table
    with pytest.raises(ValueError, match="plan table: schema_version: got 2; .*pip install -U xlplan"):
        plan_from_pairs([["schema_version", 2.0]])


# --- the migration machinery, on a synthetic version 2 (no real version 2 exists) ------------------------------------

def _title_to_name(data: dict) -> dict:
    """A synthetic migration 1 -> 2 for the test: as if version 1 had called the plan's title ``title``."""
    out = {k: v for k, v in data.items() if k != "title"}
    return {**out, "name": data["title"]} if "title" in data else out


@pytest.fixture
def synthetic_version_2(monkeypatch):
    """This xlplan as if it read version 2, with a migration from 1 that renames ``title`` to ``name``."""
    monkeypatch.setattr(versions, "PLAN_SCHEMA_VERSION", 2)
    monkeypatch.setattr(versions, "PLAN_MIGRATIONS", MappingProxyType({1: _title_to_name}))


def test_an_older_file_is_migrated_before_it_is_validated_and_left_as_written(tmp_path, capsys, synthetic_version_2):
    old = {"schema_version": 1, "title": "Written in version 1", **_without_version(REFERENCE)}
    old.pop("name")
    path = _write(tmp_path, old)
    before = path.read_bytes()
    plan = read_plan(path)
    # the migration ran before validation: `title`, unknown to the schema, became `name` instead of being refused
    assert plan.name == "Written in version 1"
    # the plan holds the current layout, and everything the migration did not touch is the file's
    assert plan.schema_version == 2
    assert plan.model_dump(exclude={"name", "schema_version"}) == reference_plan().model_dump(exclude={"name", "schema_version"})
    # a note says the file was read in a newer layout, and the file itself is unchanged
    assert "written in plan-file version 1, read as version 2" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_a_file_without_a_version_is_migrated_as_version_1(tmp_path, synthetic_version_2):
    old = {"title": "No version key", **_without_version(REFERENCE)}
    old.pop("name")
    # absent is 1, so once a version 2 exists the oldest files take every migration
    assert read_plan(_write(tmp_path, old)).name == "No version key"


def test_a_file_of_the_current_version_takes_no_migration(tmp_path, synthetic_version_2):
    # a version-2 file is read as it is: `title` is not version 2's, so it is refused at its own path, not renamed
    path = _write(tmp_path, {**REFERENCE, "schema_version": 2, "title": "x"})
    with pytest.raises(ValueError, match="title: got 'x'; unknown field"):
        read_plan(path)


def test_what_the_writer_writes_under_a_newer_version_reads_back_unmigrated(tmp_path, capsys, synthetic_version_2):
    text = plan_to_yaml(reference_plan())
    # the writer follows the current version, whatever it is
    assert text.startswith("schema_version: 2\n")
    path = tmp_path / "plan.yaml"
    path.write_text(text, encoding="utf-8")
    # and reads back as the same plan without a note: nothing to migrate
    assert read_plan(path).model_dump(exclude={"schema_version"}) == reference_plan().model_dump(exclude={"schema_version"})
    assert capsys.readouterr().err == ""


def test_the_refusal_names_the_versions_read(tmp_path, capsys, synthetic_version_2):
    _, line = _refusal(tmp_path, capsys, {**REFERENCE, "schema_version": 3})
    # with more than one version known, the line names the range this xlplan reads
    assert "got 3; this xlplan reads plan-file versions 1 to 2" in line, line


def test_migrations_run_in_order_on_copies(monkeypatch):
    seen = []

    def one_to_two(data):
        seen.append((1, data.get("step")))
        return {**data, "step": "two"}

    def two_to_three(data):
        seen.append((2, data.get("step")))
        return {**data, "step": "three"}

    monkeypatch.setattr(versions, "PLAN_SCHEMA_VERSION", 3)
    monkeypatch.setattr(versions, "PLAN_MIGRATIONS", MappingProxyType({1: one_to_two, 2: two_to_three}))
    given = {"schema_version": 1, "step": "one"}
    out = versions.upgrade_plan(given)
    # a version-1 file takes 1 -> 2 then 2 -> 3, each on what the one before made
    assert seen == [(1, "one"), (2, "two")]
    # the result is the current version, and the mapping given is untouched (the file's text is never rewritten)
    assert out == {"schema_version": 3, "step": "three"} and given == {"schema_version": 1, "step": "one"}
    # a version-2 file starts at 2 -> 3
    seen.clear()
    assert versions.upgrade_plan({"schema_version": 2, "step": "two"})["step"] == "three" and seen == [(2, "two")]



# --- the outputs' versions, as docs/versioning.md lists them ---------------------------------------------------------

VERSIONED_OUTPUTS = {"plan": PlanOutput, "capacity": CapacityOut, "schedule": ScheduleOut, "review": ReviewOut,
                     "diff": PlanDiff}


@pytest.mark.parametrize("command", sorted(VERSIONED_OUTPUTS))
def test_the_versioning_page_lists_each_versioned_output_at_its_version(command):
    doc = (ROOT / "docs" / "versioning.md").read_text(encoding="utf-8")
    version = VERSIONED_OUTPUTS[command].model_fields["schema_version"].default
    # the rule's table says each versioned output's current version, as the model that prints it has it
    assert re.search(rf"^\| `{command} --json` \| yes \| {version} \|", doc, re.MULTILINE), command


def test_the_versioning_page_states_the_plan_files_version():
    doc = (ROOT / "docs" / "versioning.md").read_text(encoding="utf-8")
    # the page's current plan-file version is the code's
    assert f"**The current version is {versions.PLAN_SCHEMA_VERSION}**" in doc


@pytest.mark.parametrize("args, version", [
    (["capacity", "--gpus", "6", "--no-verify", "--json"], CapacityOut.model_fields["schema_version"].default),
    (["schedule", "--growth", "10%", "--lead-time-days", "60", "--verify", "none", "--json"],
     ScheduleOut.model_fields["schema_version"].default),
])
def test_versioned_outputs_print_their_version(capsys, args, version):
    import json

    assert main(args) == 0
    # the JSON a script reads says which layout it is in, at its top level
    assert json.loads(capsys.readouterr().out)["schema_version"] == version
