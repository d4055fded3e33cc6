from __future__ import annotations

import json

from hippograph.extraction.tool_output import essentials


def test_plain_text_keeps_head_and_numbers() -> None:
    text = "Report for Q3\nAll systems nominal\n" + "\n".join(f"filler line {'x' * 20}" for _ in range(50)) + \
        "\nrevenue: 1,234,567 USD\n"
    out = essentials(text, 300)
    assert len(out) <= 300 + 60
    assert out.startswith("Report for Q3") and "1,234,567" in out
    assert f"cut from {len(text)} characters" in out


def test_json_is_flattened_to_paths() -> None:
    data = {"order": {"id": "A-17", "total": 99.5, "status": "shipped"},
            "items": [{"sku": f"S{i}", "qty": i} for i in range(40)], "notes": "n" * 2000}
    out = essentials(json.dumps(data), 400)
    assert "order.id: A-17" in out and "order.total: 99.5" in out
    assert "cut from" in out and len(out) < 500
