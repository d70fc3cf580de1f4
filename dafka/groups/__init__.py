"""Consumer groups: members share the partitions of their topics and commit offsets.

Pure pieces (``assign``, ``records``, ``view``, ``plan``) have no sockets and no clock;
``member`` is the IO side (a group topic's producer and reader, one thread). See
``docs/groups.md``.
"""
