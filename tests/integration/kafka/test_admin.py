"""Topic management through Kafka's admin APIs: confluent-kafka's AdminClient and
kafka-python's KafkaAdminClient create topics with numbered partitions (CreateTopics),
refuse one that exists, show them (Metadata, DescribeConfigs) and delete them."""

from __future__ import annotations

import pytest

from tests.integration.kafka.conftest import KafkaFront
from tests.procs import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # kafka-python, aiokafka
]


def partitions(bootstrap: str, topic: str) -> int | None:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
    t = md.topics.get(topic)
    return None if t is None or t.error is not None else len(t.partitions)


def test_confluent_admin_creates_refuses_a_twin_describes_and_deletes(kafka: KafkaFront) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic("adm-c", num_partitions=6)])["adm-c"].result(20)
    wait_until(lambda: partitions(kafka.bootstrap, "adm-c") == 6, 20, what="6 partitions shown")
    with pytest.raises(KafkaException) as twin:
        admin.create_topics([NewTopic("adm-c", num_partitions=2)])["adm-c"].result(20)
    assert twin.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert partitions(kafka.bootstrap, "adm-c") == 6  # the refused twin changed nothing
    resource = ConfigResource(ConfigResource.Type.TOPIC, "adm-c")
    configs = admin.describe_configs([resource])[resource].result(20)
    assert "retention.ms" in configs and "cleanup.policy" in configs
    admin.delete_topics(["adm-c"])["adm-c"].result(20)
    wait_until(lambda: partitions(kafka.bootstrap, "adm-c") is None, 20, what="topic gone")


def test_confluent_admin_validate_only_creates_nothing(kafka: KafkaFront) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic("adm-v", num_partitions=3)], validate_only=True)["adm-v"].result(
        20
    )
    assert partitions(kafka.bootstrap, "adm-v") is None


def test_kafka_python_admin_creates_and_lists(kafka: KafkaFront) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=15000)
    try:
        admin.create_topics([NewTopic("adm-kp", num_partitions=3, replication_factor=1)])
        assert "adm-kp" in admin.list_topics()
        wait_until(lambda: partitions(kafka.bootstrap, "adm-kp") == 3, 20, what="3 partitions")
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("adm-kp", num_partitions=3, replication_factor=1)])
    finally:
        admin.close()
