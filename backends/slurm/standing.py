"""Slurm's answers on where and when a job would start, and on my share of the cluster, read from
its text: ``sbatch --test-only`` (the transport sets ``SLURM_TIME_FORMAT=%s``: the start in epoch seconds),
``sshare -P`` (columns by its header, whichever the version prints), ``scontrol show assoc_mgr``
(limits as ``LIMIT(USED)``, ``N`` for none) and ``scontrol show config`` (whether there is
accounting). Pure functions; ``backend.py`` runs the commands."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone

from yanflow_tui.backends.slurm.reasons import OWNED
from yanflow_tui.placement_rank import NEVER, NOW, SOON, WAITS, Placement
from yanflow_tui.share import ShareLine

WILL_RUN = re.compile(
    r"Job (?P<id>\d+) to start at (?P<start>\S+) using (?P<cpus>\d+) processors on nodes? (?P<nodes>\S+)"
    r"(?: in partition (?P<partition>\S+))?"
)
# sbatch's refusals (its "allocation failure: ..." or "Batch job submission failed: ..."): the job as
# asked can never run there. Anything else that fails (an option an old sbatch lacks) is an error.
REFUSED = re.compile(r"(?:allocation failure|Batch job submission failed|sbatch: error):\s*(?P<why>.+)")
OPTION_MISSING = re.compile(r"unrecognized option|invalid option|unknown option|Invalid argument", re.I)


def will_run(cluster: str, text: str, now: datetime) -> Placement | None:
    """sbatch --test-only's answer (its stderr) as a placement; None when it said neither a start
    nor a refusal."""
    match = WILL_RUN.search(text)
    if match:
        start = _epoch(match["start"])
        nodes = tuple(match["nodes"].split(","))  # a hostlist expression stays one word ("gpu[01-02]")
        where = f"on {match['nodes']}" + (f" in partition {match['partition']}" if match["partition"] else "")
        if start is None or (start - now).total_seconds() <= SOON:
            return Placement(cluster, NOW, f"Slurm would start it now {where}", start or now, nodes)
        return Placement(
            cluster,
            WAITS,
            f"Slurm expects it to start at {start.astimezone().strftime('%Y-%m-%d %H:%M')} {where}",
            start,
            nodes,
        )
    refused = [m["why"].strip() for m in REFUSED.finditer(text)]
    if refused:
        return Placement(cluster, NEVER, "sbatch --test-only: " + refused[-1])
    return None


def _epoch(text: str) -> datetime | None:
    if text.isdigit():
        return datetime.fromtimestamp(int(text), timezone.utc)
    try:  # a version or site that ignores SLURM_TIME_FORMAT: its ISO local time
        return datetime.fromisoformat(text).astimezone(timezone.utc)
    except ValueError:
        return None


def accounting(config_text: str) -> str:
    """``AccountingStorageType`` from ``scontrol show config`` ("" when it is not listed)."""
    match = re.search(r"^AccountingStorageType\s*=\s*(\S+)", config_text, re.M)
    return match.group(1) if match else ""


def sshare_lines(text: str, user: str) -> list[ShareLine]:
    """Fair-share lines of ``user`` from ``sshare -P`` (header first): per account, the factor, the
    shares and the usage, each column where this version prints it."""
    rows = [line.split("|") for line in text.strip().splitlines() if line.strip()]
    if not rows:
        return []
    header = rows[0]
    out = []
    for row in rows[1:]:
        record = dict(zip(header, row))
        if record.get("User", "").strip() != user:
            continue
        scope = f"fair-share in account {record.get('Account', '?').strip()}"
        for column, what in (
            ("FairShare", "fair-share factor"),
            ("RawShares", "shares"),
            ("NormShares", "normalised shares"),
            ("RawUsage", "usage (raw)"),
            ("EffectvUsage", "effective usage"),
            ("LevelFS", "level fair-share"),
        ):
            value = record.get(column, "").strip()
            if value:
                out.append(ShareLine(scope, what, value))
    return out


LIMIT = re.compile(r"(?P<limit>[^()]*)\((?P<used>[^()]*)\)")
TOKEN = re.compile(r"(\w+)=(\S*)")


def _limits(key: str, value: str) -> Iterator[tuple[str, str, str]]:
    """(what, used, limit) of each limit set in one ``Key=value`` of assoc_mgr (``N``: none set)."""
    parts = value.split(",") if "=" in value else [value]
    for part in parts:
        name, _, figure = part.rpartition("=") if "=" in part else ("", "", part)
        match = LIMIT.fullmatch(figure)
        if match is None or match["limit"] in ("", "N"):
            continue
        yield (f"{key} {name}" if name else key), match["used"], match["limit"]


def _is_limit(key: str) -> bool:
    return key.startswith(("Grp", "Max", "Min")) and key != "MinPrioThresh"


def assoc_mgr_lines(text: str, user: str) -> list[ShareLine]:
    """Limits that apply to ``user`` from ``scontrol show assoc_mgr``, with their current use: the
    user's associations and their accounts' (Grp limits), and each QoS's limits (per user: ours).
    A record with no limit set says so in one line."""
    out: list[ShareLine] = []
    scope = ""
    found = False
    owner_ok = True
    mine_accounts: set[str] = set()
    records: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith(("ClusterName=", "QOS=")):
            records.append((line, []))
        elif records and line.startswith(" "):
            records[-1][1].append(line)
    my_uids = _uids_of(records, user)
    for head, body in records:
        fields = dict(TOKEN.findall(head))
        if "QOS" in fields:
            scope = f"QoS {fields['QOS'].split('(')[0]}"
        else:
            who = fields.get("UserName", "").split("(")[0]
            account = fields.get("Account", "")
            if who and who != user:
                continue
            if who:
                mine_accounts.add(account)
            scope = f"association {account}/{who}" if who else f"account {account}"
            if not who and not _user_in(records, user, account):
                continue
        found = False
        owner_ok = True
        for line in body:
            text = line.strip()
            if text in OWNED:  # "User Limits", "Account Limits": owners follow
                continue
            if text and "=" not in text:  # an owner: ``name(uid)``, the uid alone (22.05) or an account
                name, _, uid = text.partition("(")
                owner_ok = name == user or name in my_uids or uid.rstrip(")") in my_uids or name in mine_accounts
                continue
            if not owner_ok:
                continue
            for key, value in TOKEN.findall(line):
                if not _is_limit(key):
                    continue
                for what, used, limit in _limits(key, value):
                    out.append(ShareLine(scope, what, used, limit))
                    found = True
        if not found:
            out.append(ShareLine(scope, "limits", "none set"))
    return out


def _uids_of(records: list[tuple[str, list[str]]], user: str) -> set[str]:
    """``user``'s uid as the association records give it (``UserName=alice(1000)``)."""
    uids = set()
    for head, _ in records:
        name, _, uid = dict(TOKEN.findall(head)).get("UserName", "").partition("(")
        if name == user and uid:
            uids.add(uid.rstrip(")"))
    return uids


def _user_in(records: list[tuple[str, list[str]]], user: str, account: str) -> bool:
    """Whether ``user`` has an association under ``account`` among the records."""
    for head, _ in records:
        fields = dict(TOKEN.findall(head))
        if fields.get("Account") == account and fields.get("UserName", "").split("(")[0] == user:
            return True
    return False
