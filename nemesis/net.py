"""The nemesis network: one Linux network namespace per node on a private bridge, and the
nftables rules that cut, bridge, halve or thin the links between them.

Owns: ``Network`` (``Network.create(names)`` makes a bridge in the root namespace with the
subnet's first address, so the test driver there reaches every node; a namespace per node
with a veth pair into the bridge and an address of its own; ``close()`` removes all of it,
also after a failure) and the rule operations the nemeses compose: ``drop(a, b)`` (a no
longer receives from b), ``lose(a, b, percent)`` and ``heal()``.

Each node's namespace holds one nftables table, ``inet nemesis``, with an input chain:
a fault is a rule there, so healing is flushing that chain, and the root namespace's own
rules are never touched. It must not know about ZooKeeper, brokers or workloads.

Every name carries a tag unique to the run (``nm`` + four hex digits), so parallel runs and
left-overs of a killed run do not collide; the subnet is a ``10.x.y.0/24`` that no interface
on the machine has. Only iproute2 and nftables do the work (Debian's ``iproute2`` and
``nftables``); it needs root, as the sessions and CI have.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

DRIVER = "driver"  # the root namespace's end: the test's clients and admin connections


class NetworkError(RuntimeError):
    """An ``ip`` or ``nft`` command failed; the message holds its stderr."""


def _run(args: Sequence[str]) -> str:
    out = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise NetworkError(f"{' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def available() -> str | None:
    """Why the harness cannot run here (None when it can): root, ip and nft."""
    if os.geteuid() != 0:
        return "the nemesis harness needs root (network namespaces and nftables)"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: apt-get install iproute2 nftables"
    return None


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.x.y.0/24 that overlaps no address configured on this machine."""
    used = [
        ipaddress.ip_interface(word).network
        for line in _run(["ip", "-o", "-4", "addr", "show"]).splitlines()
        for i, word in enumerate(line.split())
        if i > 0 and line.split()[i - 1] == "inet"
    ]
    for _ in range(200):
        net = ipaddress.IPv4Network(
            f"10.{secrets.randbelow(200) + 50}.{secrets.randbelow(250)}.0/24"
        )
        if not any(net.overlaps(u) for u in used):
            return net
    raise NetworkError("no free 10.x.y.0/24 subnet found")


@dataclass
class Network:
    tag: str
    subnet: ipaddress.IPv4Network
    nodes: dict[str, str] = field(default_factory=dict)  # name -> address
    _made: list[list[str]] = field(default_factory=list)  # undo commands, newest last

    @classmethod
    def create(cls, names: Iterable[str]) -> Network:
        net = cls(tag=f"nm{secrets.token_hex(2)}", subnet=_free_subnet())
        try:
            net._build(list(names))
        except BaseException:
            net.close()
            raise
        return net

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def driver_address(self) -> str:
        return str(self.subnet.network_address + 1)

    def namespace(self, name: str) -> str:
        return f"{self.tag}-{name}"

    def _build(self, names: list[str]) -> None:
        _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        self._made.append(["ip", "link", "del", self.bridge])
        _run(["ip", "addr", "add", f"{self.driver_address}/24", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])
        for i, name in enumerate(names):
            ns = self.namespace(name)
            address = str(self.subnet.network_address + 11 + i)
            outer, inner = f"{self.tag}v{i}", f"{self.tag}n{i}"
            _run(["ip", "netns", "add", ns])
            self._made.append(["ip", "netns", "del", ns])
            _run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner])
            self._made.append(["ip", "link", "del", outer])  # takes its peer with it
            _run(["ip", "link", "set", inner, "netns", ns])
            _run(["ip", "link", "set", outer, "master", self.bridge, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", inner])
            _run(["ip", "-n", ns, "link", "set", inner, "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            self._nft(name, "add table inet nemesis")
            self._nft(name, "add chain inet nemesis input { type filter hook input priority 0 ; }")
            self.nodes[name] = address

    def address(self, name: str) -> str:
        return self.driver_address if name == DRIVER else self.nodes[name]

    def exec_prefix(self, name: str) -> list[str]:
        """The command prefix that runs a program inside ``name``'s namespace."""
        return ["ip", "netns", "exec", self.namespace(name)]

    def _nft(self, name: str, command: str) -> None:
        _run([*self.exec_prefix(name), "nft", command])

    # ------------------------------------------------------------------ the faults

    def drop(self, receiver: str, sender: str) -> None:
        """``receiver`` no longer gets packets from ``sender`` (one way)."""
        self._nft(receiver, f"add rule inet nemesis input ip saddr {self.address(sender)} drop")

    def lose(self, receiver: str, sender: str, percent: int) -> None:
        """``receiver`` drops ``percent`` % of ``sender``'s packets at random."""
        self._nft(
            receiver,
            f"add rule inet nemesis input ip saddr {self.address(sender)} "
            f"numgen random mod 100 < {percent} drop",
        )

    def rules(self, name: str) -> str:
        return _run([*self.exec_prefix(name), "nft", "list", "chain", "inet", "nemesis", "input"])

    def heal(self) -> None:
        """Every link whole again: each node's input chain flushed."""
        for name in self.nodes:
            self._nft(name, "flush chain inet nemesis input")

    def close(self) -> None:
        """Remove every namespace, link and rule this network made (rules go with their
        namespaces); each step is tried even when an earlier one failed."""
        errors = []
        while self._made:
            undo = self._made.pop()
            out = subprocess.run(undo, capture_output=True, text=True, timeout=30)
            if out.returncode != 0 and "Cannot find" not in out.stderr:
                errors.append(f"{' '.join(undo)}: {out.stderr.strip()}")
        self.nodes.clear()
        if errors:
            raise NetworkError("; ".join(errors))

    def leftovers(self) -> list[str]:
        """Namespaces and links of this run still present (empty after ``close``)."""
        names = _run(["ip", "netns", "list"]) + _run(["ip", "-o", "link", "show"])
        return sorted(
            {w.rstrip(":").split("@")[0] for w in names.split() if w.startswith(self.tag)}
        )
