"""Ray actors that own shards of the memory, and the plain services they wrap.

``actors.service`` and ``actors.deciders`` do not import Ray; ``actors.shard``,
``actors.directory`` and ``actors.runtime`` do.
"""
