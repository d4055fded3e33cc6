"""Audit events: who changed what, when; what was forgotten is recorded without its text."""

from __future__ import annotations

from datetime import datetime

from hippograph.models import AuditEvent, new_id, utcnow

FORGETTING_ACTIONS = frozenset({"delete", "expire"})


def audit_event(
    user_id: str, actor: str, action: str, item_id: str, text: str | None, related_id: str | None = None,
    at: datetime | None = None, item_kind: str = "note", session_id: str | None = None,
) -> AuditEvent:
    """An audit event; a delete or an expiry never keeps the text of what went."""
    if action in FORGETTING_ACTIONS:
        text = None
    return AuditEvent(id=new_id("audit"), user_id=user_id, at=at or utcnow(), actor=actor, action=action,
                      item_kind=item_kind, item_id=item_id, text=text, related_id=related_id, session_id=session_id)
