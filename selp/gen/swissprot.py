"""A SWISS-PROT-like CDSS generator ([Kar09] chapter 6).

ORCHESTRA's experiments split the SWISS-PROT *universal relation* (25 attributes, one row per
protein entry) among peers: each peer gets a Zipf-skewed number of relations whose attributes
partition a subset of the 25, plus a shared key, and full mappings join all of a source peer's
relations into the target peer's relations along a spanning tree of the peers (fan-in/out
experiments add edges). This module builds the same shape from synthetic data:

* **Universal relation.** 25 integer attributes named after SWISS-PROT line codes; ``ac`` (the
  accession) is the key. An entry ``e``'s value of attribute ``a`` is a deterministic hash of
  ``(seed, e, a)`` mapped to a Zipf-like (log-uniform, i.e. ``P(v) ~ 1/v``) integer, so every
  peer's projection of one entry agrees and values are skewed like real annotation data (the
  thesis hashed SWISS-PROT strings to integers, too).
* **Peers.** ``P0 .. P{n-1}``. Each peer draws 2–7 of the 24 non-key attributes, favouring
  popular ones (Zipf weights ``1/rank``), and a Zipf-skewed number of relations (1–4, mostly 1–2)
  that partition them; every relation is ``R<p>_<j>(ac, attrs...)`` with key ``ac``.
* **Mappings.** A spanning tree over the peers, directed from the earlier peer to the later one
  (``chain``: ``P(i-1) -> Pi``; ``tree``: binary, ``P((i-1)//2) -> Pi``; ``random``: a uniformly
  random earlier peer). ``fanout`` ``lo-hi`` gives each non-root peer a number of incoming
  mappings drawn from ``[lo, hi]`` (capped by the earlier peers): its tree parent plus distinct
  random earlier peers, as the thesis's fan-in/out 1, 2, 3 gives about 1, 2, 3 times ``n - 1``
  mappings. A mapping ``m<s>_<t>`` is *full*: its body joins all of the source's relations on
  ``ac``; its head has every target relation (so an entry reaching a peer reaches all its
  relations and flows on), and a target attribute the source lacks is an existential variable (a labeled null, Skolemised per mapping). Every edge goes from a lower to
  a higher peer number, so the mapping graph is a DAG and trivially weakly acyclic.
* **Base data.** ``base_size`` entries per peer. A share ``overlap`` of them comes from a pool
  all peers draw from (so tuples have several derivations, as in the thesis's deletion
  experiment, section 6.4.2); the rest are the peer's own entries (disjoint, as elsewhere in the
  thesis). :func:`fresh_entries` gives new entry ids for insertion batches ("sampled with fresh
  keys").

Deterministic per seed: the same arguments write byte-identical files.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from selp.outfile import write_text

# SWISS-PROT flat-file line codes, used as the 25 attribute names of the universal relation.
UNIVERSAL = (
    "ac", "id", "dt", "de", "gn", "os", "og", "oc", "ox", "oh", "rn", "rp", "rc",
    "rx", "rg", "ra", "rt", "rl", "cc", "dr", "pe", "kw", "ft", "sq", "crc",
)
KEY = "ac"
TOPOLOGIES = ("chain", "tree", "random")
DOMAIN = 10**6  # values are in [0, DOMAIN)
_MASK = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64 finaliser: a fast, well-spread, platform-independent 64-bit hash."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def hash64(x: int) -> int:
    """The generators' 64-bit hash (splitmix64's finaliser), for other generators that derive
    values from entries the same way."""
    return _mix(x)


def value(seed: int, entry: int, attr: int) -> int:
    """Entry ``entry``'s value of universal attribute ``attr`` (0 is the key: the entry id).

    Log-uniform over ``[1, DOMAIN]`` (density ~ 1/v, a Zipf-like skew), minus one."""
    if attr == 0:
        return entry
    h = _mix(_mix(seed * 0x100000001B3 + entry) ^ (attr * 0x2545F4914F6CDD1D))
    u = h / 2**64
    return int(DOMAIN**u) - 1


def parse_fanout(text: str) -> tuple[int, int]:
    """``"2"`` or ``"1-3"`` -> (lo, hi); a one-line error when malformed."""
    parts = str(text).split("-")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, -1)
    except ValueError:
        lo, hi = 0, -1
    if not 1 <= lo <= hi:
        raise ValueError(f"--fanout expects N or LO-HI with 1 <= LO <= HI, got {text!r}")
    return lo, hi


@dataclass(frozen=True)
class GenRelation:
    """One relation of a generated peer: its name and universal attribute indices (key first)."""

    name: str
    attrs: tuple[int, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(UNIVERSAL[a] for a in self.attrs)


@dataclass(frozen=True)
class GenMapping:
    """A full mapping from all relations of ``source`` to some relations of ``target``."""

    name: str
    source: int
    target: int
    text: str
    existential: bool


@dataclass
class SwissProtCDSS:
    """A generated CDSS: its peers' relations, mappings and base entries (see module docstring)."""

    peers: int
    base_size: int
    fanout: tuple[int, int]
    topology: str
    seed: int
    overlap: float
    relations: list[list[GenRelation]] = field(default_factory=list)  # per peer
    mappings: list[GenMapping] = field(default_factory=list)
    entries: list[list[int]] = field(default_factory=list)  # per peer, base entry ids

    # -- output --------------------------------------------------------------------------------
    def toml(self) -> str:
        """The ``cdss.toml`` text."""
        lo, hi = self.fanout
        out = [
            "# Generated by selp gen cdss (selp.gen.swissprot): a SWISS-PROT-like CDSS.",
            f"# peers={self.peers} base-size={self.base_size} fanout={lo}-{hi} topology={self.topology}"
            f" seed={self.seed} overlap={self.overlap}",
            f'name = "swissprot-{self.topology}-{self.peers}"',
            'description = "Zipf-skewed projections of a 25-attribute universal relation, full mappings on a spanning tree"',
            "",
            "mappings = [",
        ]
        out += [f'  "{m.text}",' for m in self.mappings]
        out.append("]")
        for p, rels in enumerate(self.relations):
            out.append("")
            out.append(f"[peers.P{p}]")
            for r in rels:
                out.append(f"[peers.P{p}.relations.{r.name}]")
                out.append("attributes = [" + ", ".join(f'"{c}: int"' for c in r.columns) + "]")
                out.append(f'key = ["{KEY}"]')
        return "\n".join(out) + "\n"

    def rows(self, peer: int, rel: GenRelation, entries: list[int]) -> list[tuple[int, ...]]:
        """The projection of ``entries`` onto ``rel`` (one tuple per entry)."""
        return [tuple(value(self.seed, e, a) for a in rel.attrs) for e in entries]

    def base_data(self, entries: list[list[int]] | None = None) -> dict[str, set[tuple[int, ...]]]:
        """Internal EDB name (``R<p>_<j>_l``) -> tuples, for ``entries`` per peer (default: base)."""
        entries = self.entries if entries is None else entries
        return {f"{r.name}_l": set(self.rows(p, r, entries[p])) for p, rels in enumerate(self.relations) for r in rels}

    def fresh_entries(self, per_peer: int, batch: int = 1) -> list[list[int]]:
        """``per_peer`` new entry ids per peer, disjoint from the base and from other batches."""
        start = (self.peers + 1 + batch) * max(self.base_size, 1) * 10
        return [[start + p * per_peer + i for i in range(per_peer)] for p in range(self.peers)]

    def write(self, out_dir: str | Path) -> dict[str, int]:
        """Write ``OUT/cdss.toml`` and ``OUT/data/<peer>/<relation>.csv``; returns statistics."""
        out = Path(out_dir)
        (out / "data").mkdir(parents=True, exist_ok=True)
        write_text(out / "cdss.toml", self.toml())
        tuples = 0
        for p, rels in enumerate(self.relations):
            pdir = out / "data" / f"P{p}"
            pdir.mkdir(exist_ok=True)
            for r in rels:
                rows = sorted(set(self.rows(p, r, self.entries[p])))
                tuples += len(rows)
                lines = [",".join(r.columns)] + [",".join(map(str, t)) for t in rows]
                write_text(pdir / f"{r.name}.csv", "\n".join(lines) + "\n")
        return self.stats() | {"base_tuples": tuples}

    def stats(self) -> dict[str, int]:
        return {
            "peers": self.peers,
            "relations": sum(len(r) for r in self.relations),
            "mappings": len(self.mappings),
            "existential_mappings": sum(1 for m in self.mappings if m.existential),
            "entries": sum(len(e) for e in self.entries),
        }


def _zipf_choice(rng: random.Random, n: int, s: float = 1.0) -> int:
    """An index in ``[0, n)`` with probability ~ ``1/(i+1)^s``."""
    return rng.choices(range(n), weights=[1 / (i + 1) ** s for i in range(n)])[0]


def _parents(rng: random.Random, n: int, topology: str) -> list[int]:
    """The spanning tree: ``parents[i]`` is the peer whose mapping feeds peer ``i`` (i >= 1)."""
    if topology == "chain":
        return [-1] + [i - 1 for i in range(1, n)]
    if topology == "tree":
        return [-1] + [(i - 1) // 2 for i in range(1, n)]
    return [-1] + [rng.randrange(i) for i in range(1, n)]


def generate(
    peers: int,
    base_size: int,
    fanout: str | tuple[int, int] = "1",
    topology: str = "chain",
    seed: int = 0,
    overlap: float = 0.2,
) -> SwissProtCDSS:
    """Build the generated CDSS in memory (see the module docstring); nothing is written."""
    if peers < 1:
        raise ValueError(f"--peers must be at least 1, got {peers}")
    if base_size < 0:
        raise ValueError(f"--base-size must be at least 0, got {base_size}")
    if topology not in TOPOLOGIES:
        raise ValueError(f"unknown topology {topology!r} (choose {', '.join(TOPOLOGIES)})")
    if not 0.0 <= overlap <= 1.0:
        raise ValueError(f"--overlap must be in [0, 1], got {overlap}")
    lo, hi = parse_fanout(fanout) if isinstance(fanout, str) else fanout
    if not 1 <= lo <= hi:
        raise ValueError(f"fanout must satisfy 1 <= lo <= hi, got {fanout!r}")
    rng = random.Random(f"swissprot:{seed}")
    g = SwissProtCDSS(peers, base_size, (lo, hi), topology, seed, overlap)

    # Schemas: popular attributes (low index) are shared by many peers, so mappings overlap.
    non_key = list(range(1, len(UNIVERSAL)))
    weights = [1 / (i + 1) for i in range(len(non_key))]
    for p in range(peers):
        k = 2 + _zipf_choice(rng, 6)  # 2..7 attributes, mostly few
        chosen: list[int] = []
        while len(chosen) < k:
            a = rng.choices(non_key, weights=weights)[0]
            if a not in chosen:
                chosen.append(a)
        n_rel = min(1 + _zipf_choice(rng, 4, 1.5), len(chosen))
        rng.shuffle(chosen)
        cuts = sorted(rng.sample(range(1, len(chosen)), n_rel - 1))
        parts = [chosen[i:j] for i, j in zip([0] + cuts, cuts + [len(chosen)])]
        g.relations.append([GenRelation(f"R{p}_{j}", (0, *sorted(part))) for j, part in enumerate(parts)])

    # Mappings: the spanning tree plus extra edges for fan-in above 1.
    parents = _parents(rng, peers, topology)
    for t in range(1, peers):
        want = min(rng.randint(lo, hi), t)
        sources = [parents[t]]
        others = [s for s in range(t) if s != parents[t]]
        sources += rng.sample(others, want - 1)
        for s in sorted(sources):
            g.mappings.append(full_mapping(g, s, t))

    # Base entries: a shared pool (overlap) plus the peer's own entries.
    pool = list(range(base_size))
    n_shared = round(base_size * overlap)
    for p in range(peers):
        shared = sorted(rng.sample(pool, n_shared)) if n_shared else []
        own = [base_size * (p + 1) + i for i in range(base_size - n_shared)]
        g.entries.append(shared + own)
    return g


def full_mapping(g: SwissProtCDSS, s: int, t: int) -> GenMapping:
    """The full mapping ``m<s>_<t>``: all of ``s``'s relations joined on the key, into ``t``."""
    var = {a: ("k" if a == 0 else UNIVERSAL[a]) for a in range(len(UNIVERSAL))}
    body = g.relations[s]
    have = {a for r in body for a in r.attrs}
    # Every target relation is in the head, so an entry that reaches a peer reaches all of its
    # relations and the next mapping's join on the key passes it on (data flows down the tree).
    heads = g.relations[t]
    missing = sorted({a for r in heads for a in r.attrs} - have)
    btext = ", ".join(f"{r.name}({', '.join(var[a] for a in r.attrs)})" for r in body)
    htext = ", ".join(f"{r.name}({', '.join(var[a] for a in r.attrs)})" for r in heads)
    ex = f"exists {', '.join(var[a] for a in missing)}. " if missing else ""
    name = f"m{s}_{t}"
    return GenMapping(name, s, t, f"{name}: {btext} -> {ex}{htext}", bool(missing))


def generate_cdss(
    out_dir: str | Path,
    peers: int,
    base_size: int,
    fanout: str = "1",
    topology: str = "chain",
    seed: int = 0,
    overlap: float = 0.2,
) -> dict[str, int]:
    """Generate and write a CDSS directory (``selp gen cdss``); returns its statistics."""
    return generate(peers, base_size, fanout, topology, seed, overlap).write(out_dir)
