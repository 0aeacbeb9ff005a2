"""KRaft's metadata, offline: the ``__cluster_metadata`` log and its snapshots replayed into the
cluster's image as Kafka's MetadataLoader builds it (kdump.kraft.loader), the image itself
(kdump.kraft.image), what replays a record onto it (kdump.kraft.delta), the metadata shell's
paths and the JSON the command prints (kdump.kraft.node), the topic configs it holds as a
config layer (kdump.kraft.configs), and verify's checks of the metadata partition
(kdump.kraft.checks)."""
