"""The Kafka-protocol front door (``dafka-kafka``, ``docs/kafka.md``).

A listener speaks the Kafka wire protocol over TCP so that Kafka clients (kcat,
librdkafka, confluent-kafka, aiokafka, kafka-python, the Java client) produce, consume,
commit and manage topics through Dafka, while records stay signed, stored and delivered
the Dafka way.

Layers, pure first:

- :mod:`.model`: the types every layer shares (records, partitions, the backend contract);
- :mod:`.frames`: request framing and the message types at their versions (``kio``);
- :mod:`.batches`: Kafka record batches (magic 2), their CRC and codecs;
- :mod:`.coordinator`: the consumer-group coordinator, a core driven by time;
- :mod:`.handlers`: one request in, one response (or a pending answer) out;
- :mod:`.server`: the asyncio TCP shell, bounded per connection and in total;
- :mod:`.dafka_backend`: the backend over Dafka producers, stores and metadata.
"""
