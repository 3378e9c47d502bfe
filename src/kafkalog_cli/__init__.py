"""kafkalog: read, verify, repair, retain and compact Apache Kafka's on-disk logs."""
__version__ = "0.1.0"
