"""What the node cores share, sans IO: messages, effects, the :mod:`~dafka.core.ready`
contract, discovery, admission and rate limits, the read guard. Each role's own core is in
its package (:mod:`dafka.producer`, :mod:`dafka.consumer`, :mod:`dafka.store`)."""
