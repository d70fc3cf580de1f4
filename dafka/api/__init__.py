"""What the node objects share (set-up helpers), and the facades that are no node of
their own: the admin and cluster clients, asyncio front ends. Producer, Consumer and Store
live in their packages (:mod:`dafka.producer`, :mod:`dafka.consumer`, :mod:`dafka.store`)."""
