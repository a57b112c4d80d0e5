"""``trio-broker-controller``: steer a static cluster through the brokers' control planes.

Each broker of the cluster is named by its ``listeners.json`` (written in its first log dir
at start-up: broker id and bound address per listener). The tool reads every broker's view
with Metadata on its control-plane listener, then sends the inter-broker control requests
there, as Kafka's controller does:

    trio-broker-controller --cluster b0/listeners.json --cluster b1/listeners.json describe
    ... assign TOPIC                       spread TOPIC's partitions over the brokers
    ... move-leader TOPIC PARTITION --to BROKER_ID
    ... stop-replica TOPIC PARTITION --broker BROKER_ID [--delete]

In a ZooKeeper cluster the elected controller does this work itself; there the tool is a
thin client of Kafka's APIs (``cluster_ops``), sent to that controller:

    ... elect [TOPIC:PARTITION ...] [--unclean]      ElectLeaders (preferred by default)
    ... reassign TOPIC PARTITION --to 1,2 | --cancel  AlterPartitionReassignments
    ... reassign TOPIC PARTITION --to 1,2 --throttle BYTES_PER_S   the copy throttled
    ... reassign TOPIC PARTITION --verify             done yet? then no more throttles
    ... reassignments                                 ListPartitionReassignments

A leadership change is a LeaderAndIsr to the brokers involved (the new leader takes the
partition at a higher leader epoch; the old one becomes a follower, so its producers and
consumers get NOT_LEADER_OR_FOLLOWER and go to the new leader), then an UpdateMetadata to
every broker so that Metadata answers agree. A static cluster does not replicate (that
takes ZooKeeper's controller): a partition's data stays where it was written. The
controller epoch is the number of seconds since 2023-11-14 (it only grows, so every run
of the tool outranks the runs before it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.errors import ErrorCode
from ..protocol.messages.controller import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from ..protocol.messages.metadata import MetadataRequest
from ..protocol.schema import ZERO_UUID
from .client import WireClient
from .cluster_ops import ClusterOps, ClusterOpsError

LEADER_AND_ISR_VERSION = 7
STOP_REPLICA_VERSION = 4
UPDATE_METADATA_VERSION = 8
METADATA_VERSION = 12
_EPOCH_BASE = 1_700_000_000
_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class ControllerError(Exception):
    pass


@dataclass
class ClusterBroker:
    broker_id: int
    listeners: dict[str, str]  # name -> host:port
    control: str  # the control-plane listener's host:port


@dataclass
class PartitionView:
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


@dataclass
class TopicView:
    topic_id: Any
    partitions: dict[int, PartitionView] = field(default_factory=dict)


def load_cluster(paths: list[Path], control_listener: str) -> list[ClusterBroker]:
    brokers = []
    for path in paths:
        data = json.loads(Path(path).read_text())
        listeners = data["listeners"]
        if control_listener not in listeners:
            raise ControllerError(f"{path}: broker has no {control_listener} listener")
        brokers.append(
            ClusterBroker(int(data["broker_id"]), listeners, listeners[control_listener])
        )
    ids = [b.broker_id for b in brokers]
    if len(set(ids)) != len(ids):
        raise ControllerError(f"broker ids repeat: {ids}")
    return sorted(brokers, key=lambda b: b.broker_id)


def controller_epoch() -> int:
    return int(time.time()) - _EPOCH_BASE


class Controller:
    def __init__(self, brokers: list[ClusterBroker], control_listener: str) -> None:
        self.brokers = {b.broker_id: b for b in brokers}
        self.control_listener = control_listener
        self.epoch = controller_epoch()
        self.controller_id = brokers[0].broker_id

    # ---------------------------------------------------------------- views

    def views(self) -> dict[int, dict[str, TopicView]]:
        """Every broker's own view: topic -> partitions, from Metadata on its control plane."""
        out = {}
        for b in self.brokers.values():
            with WireClient(b.control) as c:
                md = c.request(MetadataRequest(topics=None), METADATA_VERSION)
            topics = {}
            for t in md.topics:
                if t.error_code != ErrorCode.NONE or t.is_internal:
                    continue
                view = TopicView(t.topic_id)
                for p in t.partitions:
                    view.partitions[p.partition_index] = PartitionView(
                        p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes)
                    )
                topics[t.name] = view
            out[b.broker_id] = topics
        return out

    def cluster_view(self, views: dict[int, dict[str, TopicView]]) -> dict[str, TopicView]:
        """One view: for each partition, the state with the highest leader epoch."""
        merged: dict[str, TopicView] = {}
        for topics in views.values():
            for name, view in topics.items():
                into = merged.setdefault(name, TopicView(view.topic_id))
                if into.topic_id == ZERO_UUID:
                    into.topic_id = view.topic_id
                for index, p in view.partitions.items():
                    have = into.partitions.get(index)
                    if have is None or p.leader_epoch > have.leader_epoch:
                        into.partitions[index] = p
        return merged

    # -------------------------------------------------------------- requests

    def leader_and_isr(
        self, broker_id: int, topic: str, topic_id: Any, states: dict[int, PartitionView]
    ) -> None:
        req = LeaderAndIsrRequest(
            controller_id=self.controller_id,
            controller_epoch=self.epoch,
            type=0,
            topic_states=[
                LeaderAndIsrRequest.TopicState(
                    topic_name=topic,
                    topic_id=topic_id,
                    partition_states=[
                        LeaderAndIsrPartitionState(
                            partition_index=index,
                            controller_epoch=self.epoch,
                            leader=s.leader,
                            leader_epoch=s.leader_epoch,
                            isr=s.isr,
                            partition_epoch=s.leader_epoch,
                            replicas=s.replicas,
                        )
                        for index, s in sorted(states.items())
                    ],
                )
            ],
            live_leaders=[],
        )
        with WireClient(self.brokers[broker_id].control) as c:
            resp = c.request(req, LEADER_AND_ISR_VERSION)
        errors = [e for t in resp.topics for e in t.partition_errors if e.error_code]
        if resp.error_code or errors:
            raise ControllerError(f"broker {broker_id} refused LeaderAndIsr: {resp!r}")

    def stop_replica(self, broker_id: int, topic: str, partition: int, delete: bool) -> None:
        req = StopReplicaRequest(
            controller_id=self.controller_id,
            controller_epoch=self.epoch,
            topic_states=[
                StopReplicaRequest.TopicState(
                    topic_name=topic,
                    partition_states=[
                        StopReplicaRequest.TopicState.PartitionState(
                            partition_index=partition, delete_partition=delete
                        )
                    ],
                )
            ],
        )
        with WireClient(self.brokers[broker_id].control) as c:
            resp = c.request(req, STOP_REPLICA_VERSION)
        if resp.error_code or any(e.error_code for e in resp.partition_errors):
            raise ControllerError(f"broker {broker_id} refused StopReplica: {resp!r}")

    def update_metadata(self, cluster: dict[str, TopicView]) -> None:
        """Tell every broker the whole cluster: brokers, endpoints, partition leaders."""
        live = [
            UpdateMetadataRequest.Broker(
                id=b.broker_id,
                endpoints=[
                    UpdateMetadataRequest.Broker.Endpoint(
                        port=int(addr.rsplit(":", 1)[1]),
                        host=addr.rsplit(":", 1)[0].strip("[]"),
                        listener=name,
                        security_protocol=_PROTOCOL_IDS.get(name, 0),
                    )
                    for name, addr in b.listeners.items()
                    if name != self.control_listener
                ],
            )
            for b in self.brokers.values()
        ]
        topic_states = [
            UpdateMetadataRequest.TopicState(
                topic_name=name,
                topic_id=view.topic_id,
                partition_states=[
                    UpdateMetadataPartitionState(
                        partition_index=index,
                        controller_epoch=self.epoch,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        isr=p.isr,
                        zk_version=p.leader_epoch,
                        replicas=p.replicas,
                    )
                    for index, p in sorted(view.partitions.items())
                ],
            )
            for name, view in sorted(cluster.items())
        ]
        req = UpdateMetadataRequest(
            controller_id=self.controller_id,
            controller_epoch=self.epoch,
            topic_states=topic_states,
            live_brokers=live,
        )
        for b in self.brokers.values():
            with WireClient(b.control) as c:
                resp = c.request(req, UPDATE_METADATA_VERSION)
            if resp.error_code:
                raise ControllerError(f"broker {b.broker_id} refused UpdateMetadata: {resp!r}")

    # -------------------------------------------------------------- commands

    def describe(self) -> dict[str, Any]:
        cluster = self.cluster_view(self.views())
        return {
            name: {
                str(i): {"leader": p.leader, "leader_epoch": p.leader_epoch, "replicas": p.replicas}
                for i, p in sorted(view.partitions.items())
            }
            for name, view in sorted(cluster.items())
        }

    def move_leader(self, topic: str, partition: int, to: int) -> PartitionView:
        if to not in self.brokers:
            raise ControllerError(f"broker {to} is not in the cluster")
        cluster = self.cluster_view(self.views())
        view = cluster.get(topic)
        if view is None or partition not in view.partitions:
            raise ControllerError(f"no broker holds {topic}-{partition}")
        current = view.partitions[partition]
        replicas = sorted({*current.replicas, to})
        new = PartitionView(to, current.leader_epoch + 1, replicas, [to])
        # The new leader first, then everyone else that holds a replica.
        for broker_id in [to, *(r for r in replicas if r != to and r in self.brokers)]:
            self.leader_and_isr(broker_id, topic, view.topic_id, {partition: new})
        view.partitions[partition] = new
        self.update_metadata(cluster)
        return new

    def assign(self, topic: str) -> dict[int, int]:
        """Spread a topic's partitions: partition p is led by the p-th broker (mod n)."""
        views = self.views()
        cluster = self.cluster_view(views)
        view = cluster.get(topic)
        if view is None:
            raise ControllerError(f"no broker holds topic {topic!r}")
        ids = sorted(self.brokers)
        placement = {}
        for index, current in sorted(view.partitions.items()):
            leader = ids[index % len(ids)]
            new = PartitionView(leader, current.leader_epoch + 1, [leader], [leader])
            self.leader_and_isr(leader, topic, view.topic_id, {index: new})
            for broker_id, topics in views.items():
                if broker_id != leader and index in topics.get(topic, TopicView(None)).partitions:
                    self.stop_replica(broker_id, topic, index, delete=False)
            view.partitions[index] = new
            placement[index] = leader
        self.update_metadata(cluster)
        return placement


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="trio-broker-controller",
        description="Send control requests (LeaderAndIsr, StopReplica, UpdateMetadata) "
        "to the brokers of a static cluster.",
    )
    parser.add_argument(
        "--cluster",
        action="append",
        type=Path,
        required=True,
        metavar="LISTENERS_JSON",
        help="a broker's listeners.json (repeat)",
    )
    parser.add_argument(
        "--control-listener",
        default="CONTROLLER",
        help="the control-plane listener's name (default CONTROLLER)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("describe", help="print every partition's leader as JSON")
    a = sub.add_parser("assign", help="spread a topic's partitions over the brokers")
    a.add_argument("topic")
    m = sub.add_parser("move-leader", help="make another broker lead a partition")
    m.add_argument("topic")
    m.add_argument("partition", type=int)
    m.add_argument("--to", type=int, required=True, metavar="BROKER_ID")
    s = sub.add_parser("stop-replica", help="stop a broker serving a partition")
    s.add_argument("topic")
    s.add_argument("partition", type=int)
    s.add_argument("--broker", type=int, required=True, metavar="BROKER_ID")
    s.add_argument("--delete", action="store_true", help="also delete its log there")
    # A ZooKeeper cluster: its controller does the work, asked through Kafka's APIs.
    e = sub.add_parser("elect", help="ElectLeaders: preferred (or unclean) leaders again")
    e.add_argument("partitions", nargs="*", metavar="TOPIC:PARTITION", help="default: all")
    e.add_argument("--unclean", action="store_true", help="an unclean election (type 1)")
    r = sub.add_parser("reassign", help="AlterPartitionReassignments of one partition")
    r.add_argument("topic")
    r.add_argument("partition", type=int)
    r.add_argument("--to", metavar="BROKER_IDS", help="e.g. 1,2 (the first leads)")
    r.add_argument("--cancel", action="store_true", help="cancel its move under way")
    r.add_argument(
        "--throttle",
        type=int,
        metavar="BYTES_PER_S",
        help="with --to: throttle the copy to the new replicas (KIP-73), as "
        "kafka-reassign-partitions.sh --throttle",
    )
    r.add_argument(
        "--verify",
        action="store_true",
        help="is the move done? once it is, remove the throttles it set",
    )
    sub.add_parser("reassignments", help="ListPartitionReassignments, as JSON")
    args = parser.parse_args(argv)
    if args.command in ("elect", "reassign", "reassignments"):
        return _cluster_ops(args)
    try:
        controller = Controller(
            load_cluster(args.cluster, args.control_listener), args.control_listener
        )
        if args.command == "describe":
            print(json.dumps(controller.describe(), indent=1))
        elif args.command == "assign":
            print(json.dumps(controller.assign(args.topic)))
        elif args.command == "move-leader":
            new = controller.move_leader(args.topic, args.partition, args.to)
            print(f"{args.topic}-{args.partition}: leader {new.leader}, epoch {new.leader_epoch}")
        elif args.command == "stop-replica":
            controller.stop_replica(args.broker, args.topic, args.partition, args.delete)
    except (ControllerError, OSError) as exc:
        print(f"trio-broker-controller: {exc}", file=sys.stderr)
        return 1
    return 0


def _cluster_ops(args: argparse.Namespace) -> int:
    try:
        brokers = load_cluster(args.cluster, args.control_listener)
        data = [a for n, a in brokers[0].listeners.items() if n != args.control_listener]
        ops = ClusterOps(brokers[0].listeners.get("PLAINTEXT") or data[0])
        if args.command == "elect":
            wanted = [(t, int(p)) for t, _, p in (x.rpartition(":") for x in args.partitions)]
            print(json.dumps(ops.elect(wanted or None, args.unclean), indent=1))
        elif args.command == "reassign" and args.verify:
            print(_verify(ops, args.topic, args.partition))
        elif args.command == "reassign":
            if args.cancel == bool(args.to):
                raise ControllerError("give either --to BROKER_IDS, --cancel or --verify")
            if args.throttle is not None and (args.cancel or args.throttle < 0):
                raise ControllerError("--throttle takes --to and a rate >= 0")
            to = None if args.cancel else [int(b) for b in args.to.split(",")]
            if to is not None and args.throttle is not None:
                involved = ops.throttle(args.topic, args.partition, to, args.throttle)
                print(f"throttled at {args.throttle} B/s on brokers {involved}")
            print(f"{args.topic}-{args.partition}: {ops.reassign(args.topic, args.partition, to)}")
        else:
            print(json.dumps(ops.reassignments(), indent=1))
    except (ControllerError, ClusterOpsError, OSError, ValueError) as exc:
        print(f"trio-broker-controller: {exc}", file=sys.stderr)
        return 1
    return 0


def _verify(ops: ClusterOps, topic: str, partition: int) -> str:
    """Kafka's ``--verify``: is the move done; once it is, its throttles are removed."""
    if f"{topic}-{partition}" in ops.reassignments():
        return f"{topic}-{partition}: still moving"
    removed = ops.clear_throttles(topic)
    cleared = {
        (): "; other partitions of the topic still move: throttles kept",
        ("topic",): "; throttles removed from the topic (other moves keep the brokers' rates)",
        ("topic", "brokers"): "; throttles removed from the topic and every broker",
    }
    return f"{topic}-{partition}: done{cleared[tuple(removed)]}"


if __name__ == "__main__":
    sys.exit(main())
