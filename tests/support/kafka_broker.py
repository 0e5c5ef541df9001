"""A real Kafka broker for the Kafka tests: one combined broker and controller in KRaft mode (no
ZooKeeper) on 127.0.0.1, its jars fetched by `tests/support/maven.py` (the `kafka-broker` pom).

`Broker.start(folder)` formats a KRaft storage folder, starts `kafka.Kafka` with a small heap on
two free ports (clients, controller), waits until a metadata request from confluent-kafka is
answered, and `stop()` ends it by its pid (its process group), even when a test failed. The
`kafka_broker` session fixture gives the tests one broker; the helpers create topics, produce
records and read every record of a topic back with its partition and offset.

By hand, for a try-out (Ctrl-C stops it):

    python -m tests.support.kafka_broker
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import maven
from tests.support.jvm import QUICK_OPTIONS
from tests.support.scheduling import until_group_ends

#: The broker shares two cores with Spark: a small heap, few threads.
#: A small heap, and the client compiler only (tests/support/jvm.py: a test's JVM never runs long
#: enough for the optimizing compiler to pay).
HEAP = ("-Xms128m", "-Xmx384m", "-XX:+UseSerialGC", *QUICK_OPTIONS)
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
#: How often the broker is started again on new ports when another process took one of them
#: between `free_port` and the broker's bind (a JVM to format its storage and one to run it lie
#: between: seconds on busy cores, as for the standalone cluster and the minicluster).
PORT_ATTEMPTS = 3
#: What the broker's output says when it cannot bind a port it was given.
BIND_FAILED = ("Address already in use", "failed to bind")

LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = info
"""


@dataclass(frozen=True)
class Record:
    """One record as a topic holds it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, base64url without padding (kafka-storage random-uuid);
    never one that starts with "-", which the tool's argument parser would take for an option."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


def server_properties(folder: Path, port: int, controller_port: int, other_port: int) -> str:
    """One broker and controller; clients reach the broker on two ports (`port`, and
    `other_port` on a second listener), so that a broker list can name it twice."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port},"
        f"OTHER://127.0.0.1:{other_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},OTHER://127.0.0.1:{other_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"
        ),
        "log.dirs": str(folder / "data"),
        "num.partitions": "1",
        "auto.create.topics.enable": "true",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "log.cleaner.enable": "false",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


class PortTaken(RuntimeError):
    """The broker could not bind a port it was given."""


class Broker:
    """One running broker; `bootstrap` is its address for clients, `other` a second address
    of the same broker (another listener)."""

    def __init__(
        self, folder: Path, process: subprocess.Popen[bytes], port: int, other_port: int
    ) -> None:
        self.folder = folder
        self.process = process
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"
        self.other = f"127.0.0.1:{other_port}"
        self.log = folder / "broker.log"

    @classmethod
    def start(cls, folder: Path, attempts: int = PORT_ATTEMPTS) -> Broker:
        """A broker started in `folder`; started again in `folder/attempt-N`, on new ports, when
        a port was taken before it bound it (up to `attempts` times)."""
        for attempt in range(1, attempts + 1):
            try:
                return cls._start(folder / f"attempt-{attempt}" if attempt > 1 else folder)
            except PortTaken:
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    @classmethod
    def _start(cls, folder: Path) -> Broker:
        folder.mkdir(parents=True, exist_ok=True)
        jars = maven.classpath(maven.pom("kafka-broker"))
        classpath = os.pathsep.join(str(jar) for jar in jars)
        port, controller_port, other_port = free_port(), free_port(), free_port()
        config = folder / "server.properties"
        config.write_text(server_properties(folder, port, controller_port, other_port))
        logging = folder / "log4j2.properties"
        logging.write_text(LOG4J2.format(log=folder / "broker.log"))
        java = [_java(), *HEAP, f"-Dlog4j2.configurationFile={logging}", "-cp", classpath]
        formatted = subprocess.run(  # noqa: S603 - a list, never a shell
            [*java, "kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if formatted.returncode != 0:
            raise RuntimeError(
                f"kafka-storage format failed: {formatted.stdout}{formatted.stderr}"[-2000:]
            )
        out = (folder / "broker.out").open("wb")
        process = subprocess.Popen(  # noqa: S603 - a list, never a shell
            [*java, "kafka.Kafka", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out.close()
        broker = cls(folder, process, port, other_port)
        try:
            broker.wait_ready()
        except BaseException as exc:
            broker.stop()
            tail = broker.tail(200)
            if isinstance(exc, RuntimeError) and any(word in tail for word in BIND_FAILED):
                raise PortTaken(f"a port of the broker was taken:\n{tail[-2000:]}") from exc
            raise
        return broker

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        from confluent_kafka.admin import AdminClient

        # log_level 0: no "connection refused" lines while it is starting
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the broker exited ({self.process.returncode}):\n{self.tail()}")
            try:
                metadata = admin.list_topics(timeout=2)
                if metadata.brokers:
                    return
            except Exception as exc:  # noqa: BLE001 - not answering yet
                last = exc
            time.sleep(0.5)
        raise RuntimeError(f"the broker did not answer in {timeout:.0f} s ({last}):\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        texts = []
        for name in ("broker.out", "broker.log"):
            path = self.folder / name
            if path.exists():
                texts += path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(texts)

    def stop(self) -> None:
        """SIGTERM to the broker's process group, SIGKILL if it is not gone in time."""
        if self.process.poll() is None:
            _signal_group(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                _signal_group(self.process.pid, signal.SIGKILL)
                self.process.wait(STOP_TIMEOUT)
        else:
            _signal_group(self.process.pid, signal.SIGKILL)  # anything it left behind

    # -- helpers for tests ----------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int = 1) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)])
        futures[topic].result(60)
        self._wait_until_led(topic, partitions, "created")

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow `topic` to `total` partitions, and wait until each is led."""
        from confluent_kafka.admin import AdminClient, NewPartitions

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.create_partitions([NewPartitions(topic, total)])[topic].result(60)
        self._wait_until_led(topic, total, f"grown to {total} partitions")

    def _wait_until_led(self, topic: str, partitions: int, done: str) -> None:
        """Until `topic` lists `partitions` partitions and each answers for its offsets: the
        admin's answer comes before the broker leads a new partition, and a read meanwhile is
        refused (NOT_LEADER_FOR_PARTITION, seen on a loaded machine)."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "fsr-tests-ends"})
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                known = consumer.list_topics(topic, timeout=5).topics.get(topic)
                if (
                    known is not None
                    and known.error is None
                    and len(known.partitions) == partitions
                ):
                    try:
                        for number in known.partitions:
                            consumer.get_watermark_offsets(TopicPartition(topic, number), 5)
                        return
                    except KafkaException:
                        pass  # not led yet
                time.sleep(0.2)
        finally:
            consumer.close()
        raise RuntimeError(f"topic {topic} was {done} but its partitions are not all led")

    def producer(self):
        from confluent_kafka import Producer

        return Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "acks": "all"})

    def produce(
        self,
        topic: str,
        records: Iterable[
            tuple[str | bytes | None, str | bytes] | tuple[str | bytes | None, str | bytes, int]
        ],
        partition: int | None = None,
    ) -> int:
        """Produce (key, value) records, or (key, value, timestamp in ms since the epoch): the
        record's `timestamp` as a reader sees it (the topic keeps the producer's time), and wait
        until the broker has them all; their count."""
        producer = self.producer()
        failed: list[str] = []

        def delivered(err, _msg) -> None:
            if err is not None:
                failed.append(str(err))

        count = 0
        for key, value, *at in records:
            extra: dict[str, int] = {} if partition is None else {"partition": partition}
            if at:
                extra["timestamp"] = at[0]
            producer.produce(topic, key=key, value=value, on_delivery=delivered, **extra)
            producer.poll(0)
            count += 1
        left = producer.flush(60)
        if failed or left:
            raise RuntimeError(f"{len(failed) + left} records not delivered: {failed[:3]}")
        return count

    def end_offsets(self, topic: str) -> dict[int, int]:
        """Per partition, the offset after its last record (what a reader that read everything
        has committed)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "fsr-tests-ends"})
        try:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            return {
                number: consumer.get_watermark_offsets(TopicPartition(topic, number), 10)[1]
                for number in partitions
            }
        finally:
            consumer.close()

    def records(self, topic: str, timeout: float = 60.0) -> list[Record]:
        """Every record the topic holds now, with its partition and offset (no consumer group is
        committed: nothing a job reads is changed)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"fsr-tests-reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_uncommitted",
            }
        )
        try:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            ends = {}
            for number in partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, number), 10)
                if high > low:
                    ends[number] = (low, high)
            consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
            found: list[Record] = []
            left = {p: high for p, (_, high) in ends.items()}
            deadline = time.monotonic() + timeout
            while left and time.monotonic() < deadline:
                message = consumer.poll(1.0)
                if message is None:
                    continue
                if message.error():
                    raise RuntimeError(f"reading {topic}: {message.error()}")
                headers = tuple(message.headers() or ())
                found.append(
                    Record(
                        message.partition(),
                        message.offset(),
                        message.key(),
                        message.value(),
                        headers,
                    )
                )
                if message.offset() + 1 >= left.get(message.partition(), 0):
                    left.pop(message.partition(), None)
            if left:
                raise RuntimeError(f"reading {topic}: partitions {sorted(left)} not read in time")
            return sorted(found, key=lambda r: (r.partition, r.offset))
        finally:
            consumer.close()


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home, "bin", "java")) if home else "java"


def _signal_group(pid: int, number: int) -> None:
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """One broker for the tests of tests/kafka/, stopped after the last of them (pass or fail;
    tests/support/scheduling.py)."""
    with until_group_ends("kafka") as stack:
        broker = Broker.start(tmp_path_factory.mktemp("kafka-broker"))
        stack.callback(broker.stop)
        yield broker


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(
        prog="python -m tests.support.kafka_broker",
        description="Start one Kafka broker (KRaft) on 127.0.0.1 for a try-out, from jars "
        "Maven fetches; it prints the address for kafka.bootstrap.servers; Ctrl-C stops it.",
    )
    parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="fsr-kafka-"))
    broker = Broker.start(folder)
    print(f"Kafka broker (KRaft) at {broker.bootstrap}; data and logs in {folder}", flush=True)
    print("kafka.bootstrap.servers:", broker.bootstrap, flush=True)
    try:
        while broker.process.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
