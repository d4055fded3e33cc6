"""Slots a deployment adds for its own domain, per tenant, as data (`HIPPOGRAPH_EXTRACTION__SLOTS_DIR`): a
statement worded unlike any example fills the tenant's slot, a later one replaces it, another tenant's users
are not touched, and a folder or file that cannot be used is refused at start with what is wrong."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hippograph.bench.common import bench_service
from hippograph.config import Settings
from hippograph.errors import ConfigurationError
from hippograph.models import MessageIn, Note, Role
from hippograph.notes_model import tenant_slots
from hippograph.service import Hippograph

CARRIER = {
    "slot": "preferred_carrier", "kind": "preference", "multi": False,
    "description": "The freight carrier the user books first.",
    "examples": [
        "I always book Dayton Freight first.", "Estes is my go-to carrier for LTL.",
        "My preferred carrier is Old Dominion.", "I use Saia whenever I can.",
        "For anything going west I book XPO first.", "R+L Carriers is who I call first.",
        "I prefer ABF for our LTL loads.", "My first choice for freight is Southeastern.",
        "I stick with FedEx Freight for most shipments.", "I go with Averitt as my default carrier.",
        "Central Transport is the carrier I book by default.", "I'd rather ship with AAA Cooper than anyone else.",
        "Pitt Ohio is my preferred carrier for the Northeast.", "I route almost everything through YRC.",
        "Holland is the carrier I trust most and book first.", "I like to use Roadrunner for our lanes.",
        "My carrier of choice is TForce.", "I default to Ward Trucking for short hauls.",
        "Whenever possible I book with Daylight.", "I always try Forward Air first.",
    ],
}


def _settings(slots_dir: Path) -> Settings:
    base = Settings()
    return base.model_copy(update={"extraction": base.extraction.model_copy(
        update={"separate_process": False, "slots_dir": slots_dir})})


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator[Hippograph]:
    folder = tmp_path_factory.mktemp("slots")
    (folder / "freight.json").write_text(json.dumps({"slots": [CARRIER]}))
    with bench_service(None, _settings(folder)) as s:
        yield s


def _say(service: Hippograph, tenant: str, user: str, *texts: str) -> list[Note]:
    owner = service.tenancy.owner(tenant, user, create=True)
    for k, text in enumerate(texts):
        service.remember(owner, f"s{k}", None, [MessageIn(id=f"m{k}", role=Role.user, content=text)])
    return service.graph.list_notes(owner, include_history=True)


def test_a_statement_unlike_the_examples_fills_the_tenants_slot_and_a_later_one_replaces_it(service) -> None:
    notes = _say(service, "freight", "dispatcher", "I book Old Dominion first for our LTL freight.",
                 "We switched, Saia is my first call for freight now.")
    carrier = [n for n in notes if n.slot == "preferred_carrier"]
    assert [n.current for n in carrier] == [False, True], notes
    assert "Saia" in carrier[1].text and "Dominion" in carrier[0].text
    assert carrier[1].kind.value == "preference"


def test_another_tenants_users_keep_the_catalogue(service) -> None:
    notes = _say(service, "other", "dispatcher", "I book Old Dominion first for our LTL freight.")
    assert not [n for n in notes if n.slot == "preferred_carrier"], notes  # the same words fill it in "freight"


def test_what_is_not_a_statement_fills_no_slot(service) -> None:
    notes = _say(service, "freight", "asker", "Which carrier does Jenny usually book for the Memphis lane?")
    assert not [n for n in notes if n.slot.startswith("preferred_carrier")], notes


def test_a_folder_or_file_that_cannot_be_used_is_refused(tmp_path: Path) -> None:
    embed = lambda texts: [[1.0] + [0.0] * 383 for _ in texts]  # the vectors are not read here
    with pytest.raises(ConfigurationError, match="no such folder"):
        tenant_slots.load(tmp_path / "missing", embed)
    (tmp_path / "acme.json").write_text(json.dumps({"slots": [{**CARRIER, "slot": "city"}]}))
    with pytest.raises(ConfigurationError, match=r"acme.json: slots.0.slot: .*'city' is a slot of the catalogue"):
        tenant_slots.load(tmp_path, embed)
    (tmp_path / "acme.json").write_text(json.dumps({"slots": [{**CARRIER, "examples": ["one"]}]}))
    with pytest.raises(ConfigurationError, match="examples"):
        tenant_slots.load(tmp_path, embed)
    (tmp_path / "acme.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match="cannot be read as JSON"):
        tenant_slots.load(tmp_path, embed)
    (tmp_path / "acme.json").write_text(json.dumps({"slots": [CARRIER, CARRIER]}))
    with pytest.raises(ConfigurationError, match="named twice"):
        tenant_slots.load(tmp_path, embed)
    (tmp_path / "acme.json").unlink()
    (tmp_path / "bad tenant!.json").write_text(json.dumps({"slots": [CARRIER]}))
    with pytest.raises(ConfigurationError, match="file name is the tenant's"):
        tenant_slots.load(tmp_path, embed)


def test_the_server_refuses_to_start_on_a_bad_slots_folder(tmp_path: Path) -> None:
    from hippograph.wiring import build

    with pytest.raises(ConfigurationError, match="SLOTS_DIR"):
        build(_settings(tmp_path / "nowhere").model_copy(update={"data_dir": tmp_path / "data"}))
