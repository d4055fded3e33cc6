"""`hippograph bench scale`: ingest throughput, context latency, memory and disk at growing sizes.

A "memory" is one ingested message. The messages are synthetic conversations generated from the seed
alone (no data files, no downloads): every user has a persona (city, employer, manager, project,
tastes) that changes over time (moves, job changes, new managers), and sessions of 10-40 messages
alternate user and assistant turns drawn from templates, with small talk, questions and answers, and
timestamps that grow over weeks. New users join every `USER_EVERY` messages (at least `MIN_USERS`);
one user gets `HEAVY_SHARE` of the sessions so that their graph and index are large, since context
latency depends on the size of one user's memory, not on the whole store.

The sizes are cumulative: the store grows through them, only the difference is ingested each time,
and the first N messages of the stream are the same whatever the sizes asked for. At each size:
ingest throughput of that increment (messages/s through `Hippograph.remember`, one session per call:
extraction, embedding, both stores); latency of `--queries` context calls (1000-token budget, half for
the heavy user, after two uncounted warm-up calls), p50/p95 in ms and the plans chosen; RSS now
(VmRSS) and peak (ru_maxrss); the data folder on disk: the sum of file sizes, which counts the
vector store's preallocated (sparse) files in full, and the space actually allocated. Recall is not
scored here.
"""

from __future__ import annotations

import random
import resource
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import groupby
from pathlib import Path

from hippograph.bench.common import (
    bench_service,
    command_line,
    machine,
    models_used,
    percentile,
    write_report,
)
from hippograph.errors import InvalidInput
from hippograph.models import MessageIn, Role

USER_EVERY, MIN_USERS, HEAVY_SHARE, HEAVY = 2000, 5, 0.3, "user-000"
COLUMNS = ("memories", "users", "heavy_user_memories", "ingest_messages_per_s", "latency_p50_ms",
           "latency_p95_ms", "heavy_p95_ms", "tokens_mean", "rss_mb", "peak_rss_mb", "disk_mb",
           "disk_allocated_mb")
START = datetime(2024, 1, 8, 9, 0, tzinfo=UTC)


def _words(text: str, sep: str = " ") -> tuple[str, ...]:
    return tuple(text.split(sep))


FIRST = _words("Maya Liam Dana Omar Priya Lucas Sofia Kenji Amara Jonas Elena Mateo Aisha Noah Hana Felix "
               "Ines Tariq Clara Diego Yuki Marta Samuel Leila Viktor Nora Ravi Greta Tomas Zara")
LAST = _words("Kim Patel Silva Novak Okafor Berg Rossi Tanaka Haddad Moreau Fischer Costa Nguyen Larsen")
CITY = _words("Lisbon Berlin Toronto Nairobi Osaka Madrid Denver Melbourne Prague Austin Dublin Seoul Lyon "
              "Bogota Helsinki Porto Chicago Vienna")
ORG = _words("Acme Robotics|Northwind Labs|Bluefin Health|Orbital Freight|Greenleaf Energy|Quartz Analytics|"
             "Harbor Bank|Pinecone Studios|Vega Motors|Lumen Education", "|")
PROJECT = _words("Atlas Beacon Falcon Mercury Orion Nimbus Polaris Sequoia Tundra Zephyr")
ROLE = _words("data engineer|product designer|nurse|sales lead|backend developer|teacher|analyst", "|")
LIKE = _words("tea|coffee|sparkling water|green smoothies|hot chocolate|espresso|oat lattes", "|")
HOBBY = _words("bouldering|sourdough baking|chess|trail running|watercolor painting|cycling|pottery|"
               "salsa dancing", "|")
MONTH = _words("January February March April May June July August September October November December")
DAY = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
PLACE = _words("the Italian place on Main Street|a small cafe near the station|the park by the river|"
               "the new food hall|the library downtown|the gym on the corner", "|")
TOPIC = _words("the budget review|the hiring plan|the quarterly report|the customer demo|the data migration|"
               "the security audit|the launch checklist|the onboarding guide", "|")
FOOD = _words("a mushroom risotto|a lentil curry|homemade pizza|a Thai green curry|roast chicken|paella", "|")

EVENTS = {  # persona changes: the slot that changes, the user telling it, the reply
    "city": ("I moved to {city} last {month}, and I am still getting used to the weather there.",
             "Moving is a lot of work. How are you finding {city} so far? Have you met people yet?"),
    "org": ("Big news: I just started a new job at {org} as a {role}, and the first week was intense.",
            "Congratulations on the new role at {org}! What are you most excited about as a {role}?"),
    "manager": ("My manager is {manager} now; they took over the team after the reorg in {month}.",
                "Would it help to prepare a few questions for your first one-on-one with {manager}?"),
    "project": ("I'm working on {project} with {friend} now, we want to ship the first version by {month}.",
                "That is a tight timeline for {project}. Shall we split it into weekly milestones?"),
    "like": ("I prefer {like} over {other} these days, especially in the mornings before work.",
             "Noted, {like} over {other}. I will keep that in mind when suggesting places to meet."),
    "hobby": ("I started {hobby} a few weeks ago and I try to go every Saturday with {friend}.",
              "That sounds fun! Going with {friend} every week is a great way to keep the habit."),
}
CHAT = (  # everyday exchanges about the persona: (user, assistant)
    ("I live in {city} with my partner and our dog, in a small flat close to {place}.",
     "That sounds lovely. Being close to {place} in {city} must be handy in the evenings."),
    ("{manager} manages {project} and wants {topic} on their desk by {day}.",
     "Then aim for a draft of {topic} a day before {day}, so {manager} has time to review it."),
    ("My friend {friend} works at {org} too, we had lunch at {place} on {day}.",
     "It is nice to have a friend at work. Does {friend} work on {project} as well?"),
    ("Can you help me plan the next steps for {project}? {topic} is due at the end of {month}.",
     "Here is a plan: list the open tasks for {topic}, rank them by impact, and check in with {manager}."),
    ("I had a long day at {org}, {n} meetings in a row about {topic} and no time for lunch.",
     "That sounds exhausting. Could you block an hour on {day} morning to focus without meetings?"),
    ("Do you think {hobby} is a good way to relax after work, or is it too tiring?",
     "It can be very relaxing. Start slowly, twice a week, and see how you feel after a month."),
    ("Remind me to call {friend} on {day} about the trip to {other_city} in {month}.",
     "Sure, I will remind you on {day} to call {friend} about the trip to {other_city}."),
    ("What should I bring to the team offsite in {other_city}? It is {n} days in {month}.",
     "For {n} days in {other_city}, pack layers, a charger, and your notes on {topic}."),
    ("How long does it take to get from {city} to {other_city} by train?",
     "It depends on the connection, usually a few hours; booking early for {month} is much cheaper."),
    ("I think I will stick with {like}, it keeps me awake without the jitters.",
     "Sounds like a good choice. Just try not to have it too late in the afternoon."),
    ("{colleague} from the {project} team asked me to review {topic} before {day}.",
     "Would it help to set aside {n} hours on {day} morning? I can draft a checklist for {topic}."),
    ("I'm cooking {food} for {friend} on {day}, any tips?",
     "For {food}, prepare everything the night before; {friend} will enjoy a relaxed host."),
    ("{n} new people joined {org} this month, including {colleague}.",
     "Growing teams are busy. Maybe offer {colleague} a short tour of how {project} works."),
    ("My sister is visiting me in {city} from {other_city} in {month}.",
     "How nice! {city} in {month} should be pleasant. Do you have plans for her visit?"),
    ("I finished {topic} for {project} today and {manager} seemed happy with it.",
     "Well done! Finishing {topic} is a real milestone for {project}."),
    ("Could you list what I need to do before {day}? I keep forgetting {topic}.",
     "Before {day}: finish {topic}, reply to {colleague}, and book the train to {other_city}."),
)
SMALL_TALK = (("thanks!", "You're welcome! Anything else I can help with today?"),
              ("Good morning! How are you today?", "Good morning! I'm well, thanks. What is on your mind?"),
              ("ok, sounds good to me.", "Great, let me know how it goes."),
              ("Haha, fair enough. Let me think about it and get back to you.",
               "Of course, take your time. I will be here when you want to pick it up again."),
              ("Good night, talk to you tomorrow.", "Good night! Sleep well."))
ASIDES = ("Anyway, work at {org} has been busy lately.", "By the way, {friend} says hi.",
          "Also, I slept badly last night so I might be slow today.", "It has been grey in {city} all week.",
          "I had {like} at {place} this morning, which helped.")
FOLLOW_UPS = ("Is there anything else about {project} you want to go over?",
              "Would you like me to write that down for later?",
              "Should I remind you about {topic} on {day}?")
QUESTIONS = ("Where do I live?", "Who is my manager?", "Who manages the project I work on?",
             "Where does the manager of {project} work?", "When did I move to {city}?",
             "When did I start at {org}?", "What do you know about me?", "What do I like to drink?",
             "Which city is {friend}'s trip to {other_city} in?", "What did I say about {hobby}?")


@dataclass
class Stream:
    messages: list[tuple[str, str, MessageIn]]  # (user id, session id, message) in ingest order
    personas: dict[str, dict[str, str]]


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _persona(rng: random.Random) -> dict[str, str]:
    return {"name": rng.choice(FIRST), "city": rng.choice(CITY), "org": rng.choice(ORG),
            "role": rng.choice(ROLE), "manager": _person(rng), "friend": _person(rng),
            "project": rng.choice(PROJECT), "like": rng.choice(LIKE), "hobby": rng.choice(HOBBY)}


def _slots(rng: random.Random, p: dict[str, str]) -> dict[str, str]:
    """The persona plus what one exchange mentions in passing (a day, a colleague, another city...)."""
    return {**p, "month": rng.choice(MONTH), "other_city": rng.choice([c for c in CITY if c != p["city"]]),
            "other": rng.choice([x for x in LIKE if x != p["like"]]), "day": rng.choice(DAY),
            "place": rng.choice(PLACE), "topic": rng.choice(TOPIC), "food": rng.choice(FOOD),
            "colleague": _person(rng), "n": str(rng.randint(2, 6))}


def generate(seed: int, total: int) -> Stream:
    """`total` messages, deterministic for the seed; a prefix of the stream for any larger total."""
    rng = random.Random(seed)
    stream = Stream([], {})
    clock, n_sessions = START, 0
    while len(stream.messages) < total:
        active = max(MIN_USERS, len(stream.messages) // USER_EVERY + 1)
        for i in range(len(stream.personas), active):
            stream.personas[f"user-{i:03d}"] = _persona(rng)
        user = HEAVY if rng.random() < HEAVY_SHARE else f"user-{rng.randrange(1, active):03d}"
        p, session = stream.personas[user], f"s{seed}-{n_sessions:06d}"
        n_sessions += 1
        clock += timedelta(minutes=rng.randint(60, 720))
        reply, slots = "", p
        for turn in range(min(rng.randint(10, 40), total - len(stream.messages))):
            if turn % 2:
                role, name, text = Role.assistant, None, reply
                if rng.random() < 0.25:
                    text += " " + rng.choice(FOLLOW_UPS).format(**slots)
            else:
                role, name, roll = Role.user, p["name"], rng.random()
                if roll < 0.05:
                    slot = rng.choice(list(EVENTS))
                    old = p[slot]
                    while p[slot] == old:  # a real change: a new city, employer, manager...
                        p[slot] = _persona(rng)[slot]
                    pair = EVENTS[slot]
                else:
                    pair = rng.choice(SMALL_TALK if roll < 0.17 else CHAT)
                slots = _slots(rng, p)
                text, reply = (t.format(**slots) for t in pair)
                if roll >= 0.17 and rng.random() < 0.3:
                    text += " " + rng.choice(ASIDES).format(**slots)
            mid = f"s{seed}-m{len(stream.messages):07d}"
            stamp = clock + timedelta(seconds=45 * turn + rng.randint(0, 40))
            stream.messages.append((user, session, MessageIn(id=mid, role=role, content=text, name=name,
                                                             timestamp=stamp)))
    return stream


def questions(stream: Stream, seed: int, n: int) -> list[tuple[str, str | None, str]]:
    """(user, their latest session or None, question): every other one for the heavy user."""
    rng, last = random.Random(seed + 1), {u: s for u, s, _ in stream.messages}
    others = sorted(u for u in last if u != HEAVY)
    out = []
    for i in range(n):
        user = HEAVY if i % 2 == 0 or not others else rng.choice(others)
        session = last[user] if rng.random() < 0.5 else None
        out.append((user, session, rng.choice(QUESTIONS).format(**_slots(rng, stream.personas[user]))))
    return out


def _rss_mb() -> tuple[float, float]:
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    return round(current, 1), round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _disk_mb(folder: Path) -> tuple[float, float]:
    """Sum of file sizes, and the space actually allocated (the vector store preallocates sparse files)."""
    stats = [f.stat() for f in folder.rglob("*") if f.is_file()]
    return (round(sum(st.st_size for st in stats) / 2**20, 1),
            round(sum(st.st_blocks * 512 for st in stats) / 2**20, 1))


def run(sizes: list[int], seed: int, out: Path | None, workdir: Path | None, queries: int) -> dict:
    sizes = sorted({s for s in sizes if s > 0})
    if not sizes or queries < 0:
        raise InvalidInput("--memories needs at least one positive size, and --queries cannot be negative")
    stream = generate(seed, sizes[-1])
    results: dict[str, dict[str, float | int]] = {}
    per_user: dict[str, dict[str, int]] = {}
    plans: dict[str, dict[str, int]] = {}
    done = 0
    with tempfile.TemporaryDirectory(prefix="hippograph-scale-") as tmp:
        folder = workdir or Path(tmp)
        with bench_service(folder) as service:
            for size in sizes:
                stored, started = 0, time.perf_counter()
                for (user, session), group in groupby(stream.messages[done:size], key=lambda m: (m[0], m[1])):
                    stored += len(service.remember(user, session, None, [m for _, _, m in group]).stored)
                    print(f"\r{size}: ingested {stored}/{size - done}", end="", file=sys.stderr)
                ingest_s = time.perf_counter() - started
                print(file=sys.stderr)
                already = size - done - stored
                if already:
                    print(f"{already} messages were already stored in {folder}", file=sys.stderr)
                done = size
                prefix = Stream(stream.messages[:size], stream.personas)
                lat: list[float] = []
                heavy: list[float] = []
                tokens: list[int] = []
                chosen: Counter[str] = Counter()
                for i, (user, session, question) in enumerate(questions(prefix, seed, queries + 2)):
                    t0 = time.perf_counter()
                    res = service.context(user, question, session_id=session, token_budget=1000)
                    ms = (time.perf_counter() - t0) * 1000
                    if i >= 2:  # the first two are warm-up
                        lat.append(ms)
                        tokens.append(res.tokens)
                        chosen[str(res.plan["name"])] += 1
                        if user == HEAVY:
                            heavy.append(ms)
                rss, peak = _rss_mb()
                disk, allocated = _disk_mb(folder)
                counts = Counter(u for u, _, _ in prefix.messages)
                results[str(size)] = {
                    "memories": size, "users": len(counts), "heavy_user_memories": counts[HEAVY],
                    "ingest_messages_per_s": round(stored / ingest_s, 1) if stored else 0.0,
                    "already_stored": already,  # a reused --workdir: these were not ingested (and not timed)
                    "ingest_s": round(ingest_s, 1),
                    "latency_p50_ms": round(percentile(lat, 0.5), 2),
                    "latency_p95_ms": round(percentile(lat, 0.95), 2),
                    "heavy_p50_ms": round(percentile(heavy, 0.5), 2),
                    "heavy_p95_ms": round(percentile(heavy, 0.95), 2),
                    "tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else 0.0,
                    "rss_mb": rss, "peak_rss_mb": peak, "disk_mb": disk,
                    "disk_allocated_mb": allocated,
                }
                per_user[str(size)] = dict(sorted(counts.items()))
                plans[str(size)] = dict(chosen.most_common())
                print(f"{size}: {results[str(size)]} plans {plans[str(size)]}", file=sys.stderr)
            models = models_used(service)
    report = {
        "benchmark": "scale",
        "command": command_line(),
        "seed": seed,
        "queries": queries,
        "machine": machine(),
        "models": models,
        "metric": "memories = messages ingested (cumulative); ingest rate of each increment; context latency "
                  "over `queries` calls at a 1000-token budget, half of them for the heavy user",
        "messages_per_user": per_user,
        "plans": plans,
        "results": results,
    }
    write_report(report, out, COLUMNS)
    return report
