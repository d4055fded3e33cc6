"""Check conversation files of LoCoMo's format (bench/conversations/README.md) and print their counts.

    python bench/check_conversations.py bench/conversations/*/*.json

Exits 1 and names every problem when a file breaks a rule: the shape, the turn ids, the dates, the
question counts, an evidence id that does not exist, or an answer its evidence does not support.
Standard library only, so that it runs anywhere.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MIN_PER_CATEGORY = {1: 15, 2: 15, 3: 5, 4: 35, 5: 15}
MIN_SESSIONS, MAX_SESSIONS, MIN_TURNS, MIN_QUESTIONS = 15, 30, 300, 100
SUPPORTED_SHARE = 0.6  # of an answer's content words that its evidence must contain
DATE = re.compile(r"^(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})$", re.IGNORECASE)
DIA = re.compile(r"^D(\d+):(\d+)$")
WORD = re.compile(r"[a-z0-9]+")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
TIME_WORDS = {*MONTHS, *(m[:3] for m in MONTHS), "monday", "tuesday", "wednesday", "thursday", "friday",
              "saturday", "sunday", "weekend", "day", "days", "week", "weeks", "month", "months", "year",
              "years", "ago", "before", "after", "since", "yesterday", "today", "tomorrow", "morning",
              "evening", "night", "spring", "summer", "autumn", "fall", "winter", "christmas", "easter",
              "hour", "hours", "decade", "decades", "weekday", "noon", "midnight", "tonight", "last", "next"}
NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "once": "1",
                "twice": "2", "first": "1", "second": "2", "third": "3", "a": "1", "an": "1", "single": "1",
                "couple": "2", "pair": "2", "dozen": "12", "half": "0.5"}
STOP = {"the", "of", "and", "or", "to", "in", "on", "at", "for", "with", "by", "from", "is", "are", "was",
        "were", "be", "been", "it", "its", "that", "this", "as", "he", "she", "they", "his", "her", "their",
        "them", "him", "we", "our", "you", "your", "i", "my", "me", "not", "no", "yes", "also", "both",
        "some", "about", "into", "than", "then", "so", "do", "did", "does", "has", "had", "have", "s", "t",
        "very", "just", "because", "up", "out", "over", "after", "before", "when", "while", "all", "one"}


def stem(word: str) -> str:
    word = NUMBER_WORDS.get(word, word)
    for end in ("ing", "ed", "es", "s"):
        if len(word) > len(end) + 3 and word.endswith(end):
            word = word[: -len(end)]
            break
    return word[:6]


def content_words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


def parse_date(text: str) -> datetime | None:
    m = DATE.match(str(text).strip())
    if not m:
        return None
    hour, minute, ampm, day, month, year = m.groups()
    try:
        month_no = datetime.strptime(month[:3].title(), "%b").month
        return datetime(int(year), month_no, int(day), int(hour) % 12 + (12 if ampm.lower() == "pm" else 0),
                        int(minute))
    except ValueError:
        return None


def supported(answer: str, evidence: str) -> bool:
    """At least SUPPORTED_SHARE of the answer's content words (loosely stemmed; number words as digits)
    occur in the evidence turns, their speakers and their session dates."""
    words = content_words(answer)
    if not words:
        return False
    have = {stem(w) for w in WORD.findall(evidence.lower())}
    return sum(stem(w) in have for w in words) >= SUPPORTED_SHARE * len(words)


def names_time(text: str) -> bool:
    return bool(set(WORD.findall(text.lower())) & TIME_WORDS or re.search(r"\b(1[89]\d\d|20\d\d)\b", text))


def counted(question: str, answer: str, evidence: list[str]) -> bool:
    """'How many ...?' answered by a number no larger than the evidence turns that show each one."""
    if not re.match(r"\s*how (many|often)\b", question, re.IGNORECASE):
        return False
    numbers = [NUMBER_WORDS.get(w, w) for w in WORD.findall(answer.lower())]
    found = [float(n) for n in numbers if re.fullmatch(r"\d+", n)]
    return bool(found) and max(found) <= len(set(evidence))


def check_sample(sample: dict, where: str) -> tuple[list[str], dict]:
    problems: list[str] = []
    if not isinstance(sample, dict):
        return [f"{where}: a sample must be an object"], {}
    sid = sample.get("sample_id")
    where = f"{where} [{sid}]"
    conv = sample.get("conversation")
    if not isinstance(sid, str) or not sid:
        problems.append(f"{where}: sample_id must be a non-empty string")
    if not isinstance(conv, dict):
        return [*problems, f"{where}: 'conversation' must be an object"], {}
    a, b = conv.get("speaker_a"), conv.get("speaker_b")
    if not (isinstance(a, str) and isinstance(b, str) and a and b and a != b):
        problems.append(f"{where}: speaker_a and speaker_b must be two different names")
    keys = [k for k in conv if re.fullmatch(r"session_\d+", k)]
    numbers = sorted(int(k.split("_")[1]) for k in keys)
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"{where}: sessions must be numbered 1..N without gaps, got {numbers[:40]}")
    if not MIN_SESSIONS <= len(numbers) <= MAX_SESSIONS:
        problems.append(f"{where}: {len(numbers)} sessions, want {MIN_SESSIONS}-{MAX_SESSIONS}")
    turns: dict[str, str] = {}
    session_of: dict[str, datetime] = {}
    previous: datetime | None = None
    for n in numbers:
        key = f"session_{n}"
        when = parse_date(conv.get(f"{key}_date_time", ""))
        if when is None:
            problems.append(f"{where}: {key}_date_time {conv.get(f'{key}_date_time')!r} is not like "
                            "'1:56 pm on 8 May, 2023'")
        elif previous is not None and when <= previous:
            problems.append(f"{where}: {key} is dated {when} but the session before it {previous}")
        previous = when or previous
        session = conv.get(key)
        if not isinstance(session, list) or not session:
            problems.append(f"{where}: {key} must be a non-empty list of turns")
            continue
        for k, turn in enumerate(session, start=1):
            dia = turn.get("dia_id") if isinstance(turn, dict) else None
            if dia != f"D{n}:{k}":
                problems.append(f"{where}: turn {k} of {key} has dia_id {dia!r}, want 'D{n}:{k}'")
                continue
            if turn.get("speaker") not in (a, b):
                problems.append(f"{where}: {dia} speaker {turn.get('speaker')!r} is neither speaker")
            text = turn.get("text")
            if not isinstance(text, str) or not text.strip():
                problems.append(f"{where}: {dia} has no text")
                continue
            caption = turn.get("blip_caption") or ""
            turns[dia] = f"{turn.get('speaker')} {text} {caption}"
            if when is not None:
                session_of[dia] = when
    if len(turns) < MIN_TURNS:
        problems.append(f"{where}: {len(turns)} turns, want at least {MIN_TURNS}")
    qa = sample.get("qa")
    if not isinstance(qa, list):
        return [*problems, f"{where}: 'qa' must be a list"], {}
    counts: Counter[int] = Counter()
    seen: set[str] = set()
    for i, item in enumerate(qa):
        q = f"{where} qa[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{q}: must be an object")
            continue
        question, category, evidence = item.get("question"), item.get("category"), item.get("evidence")
        if not isinstance(question, str) or not question.strip():
            problems.append(f"{q}: no question")
            continue
        q = f"{q} {question!r}"
        if question.strip().lower() in seen:
            problems.append(f"{q}: asked twice")
        seen.add(question.strip().lower())
        if category not in CATEGORIES:
            problems.append(f"{q}: category must be one of {sorted(CATEGORIES)}")
            continue
        counts[category] += 1
        if not isinstance(evidence, list) or not evidence or not all(isinstance(e, str) for e in evidence):
            problems.append(f"{q}: evidence must be a non-empty list of turn ids")
            continue
        missing = [e for e in evidence if e not in turns]
        if missing:
            problems.append(f"{q}: evidence {missing} is not a turn of this conversation")
            continue
        if len(set(evidence)) != len(evidence):
            problems.append(f"{q}: evidence lists a turn twice")
        text = " ".join(turns[e] for e in evidence)
        dates = [session_of[e] for e in evidence if e in session_of]
        text += " " + " ".join(f"{d.day} {MONTHS[d.month - 1]} {d.year} {d.strftime('%A').lower()}" for d in dates)
        if category == 5:
            wrong = item.get("adversarial_answer")
            if "answer" in item:
                problems.append(f"{q}: an adversarial question has no 'answer', only 'adversarial_answer'")
            if not isinstance(wrong, str) or not supported(wrong, text):
                problems.append(f"{q}: adversarial_answer {wrong!r} is not in its evidence")
            continue
        answer = item.get("answer")
        if isinstance(answer, int | float):
            answer = str(answer)
        if not isinstance(answer, str) or not answer.strip():
            problems.append(f"{q}: no answer")
            continue
        if category == 1 and len(set(evidence)) < 2:
            problems.append(f"{q}: a multi-hop question needs at least two evidence turns")
        if category in (1, 4) and not supported(answer, text) and not counted(question, answer, evidence):
            problems.append(f"{q}: answer {answer!r} is not in its evidence")
        if category == 2:
            if not names_time(answer) and not (names_time(question) and supported(answer, text)):
                problems.append(f"{q}: temporal answer {answer!r} names no date or time, and the question "
                                "names none that its evidence answers")
            years = {int(y) for y in re.findall(r"\b(1[89]\d\d|20\d\d)\b", answer)}
            latest = max((d.year for d in dates), default=None)
            if latest is not None and any(y > latest + 1 for y in years if str(y) not in text):
                problems.append(f"{q}: temporal answer {answer!r} is after its evidence ({latest})")
    if len(qa) < MIN_QUESTIONS:
        problems.append(f"{where}: {len(qa)} questions, want at least {MIN_QUESTIONS}")
    for cat, least in MIN_PER_CATEGORY.items():
        if counts[cat] < least:
            problems.append(f"{where}: {counts[cat]} {CATEGORIES[cat]} questions, want at least {least}")
    return problems, {"sessions": len(numbers), "turns": len(turns), "questions": len(qa),
                      **{CATEGORIES[c]: counts[c] for c in CATEGORIES}}


def check_file(path: Path, ids: set[str]) -> tuple[list[str], list[dict]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return [f"{path}: cannot read: {exc}"], []
    if not isinstance(data, list) or not data:
        return [f"{path}: a file is a non-empty list of samples"], []
    problems, stats = [], []
    for i, sample in enumerate(data):
        p, s = check_sample(sample, f"{path}#{i}")
        sid = sample.get("sample_id") if isinstance(sample, dict) else None
        if sid in ids:
            p.append(f"{path}#{i}: sample_id {sid!r} is used twice")
        ids.add(str(sid))
        problems += p
        if s:
            stats.append({"file": str(path), "sample_id": sid, **s})
    return problems, stats


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip())
        return 2
    problems, stats, ids = [], [], set()
    for name in argv:
        p, s = check_file(Path(name), ids)
        problems += p
        stats += s
    for row in stats:
        print(" ".join(f"{k}={v}" for k, v in row.items()))
    if stats:
        total = Counter()
        for row in stats:
            total.update({k: v for k, v in row.items() if isinstance(v, int)})
        print(f"total: {len(stats)} conversations, " + ", ".join(f"{k} {v}" for k, v in total.items()))
    for p in problems:
        print("PROBLEM", p)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
