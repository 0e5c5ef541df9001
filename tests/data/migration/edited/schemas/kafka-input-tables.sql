-- Spark's Kafka source has its own columns (key, value, topic, partition, offset, timestamp,
-- timestampType): the JSON in `value` is parsed in each query, and the watermark is on the
-- record's `timestamp`. `{group_id}` was the original's `rta-<name>-<version>`.

CREATE TABLE `kafka`.`orders` (
    WATERMARK FOR `timestamp` AS `timestamp` - INTERVAL '5' SECOND
) USING kafka OPTIONS (
  'subscribe' = 'orders',
  'kafka.bootstrap.servers' = 'kafka:9092',
  'kafka.group.id' = 'rta-{job_name}-{query_version}',
  'startingOffsets' = 'earliest'
)
;

CREATE TABLE `kafka`.`payments` (
    WATERMARK FOR `timestamp` AS `timestamp` - INTERVAL '5' SECOND
) USING kafka OPTIONS (
  'subscribe' = 'payments',
  'kafka.bootstrap.servers' = 'kafka:9092',
  'kafka.group.id' = 'rta-{job_name}-{query_version}',
  'startingOffsets' = 'earliest'
)
;

CREATE TABLE `kafka`.`page-views` (
    WATERMARK FOR `timestamp` AS `timestamp` - INTERVAL '10' SECOND
) USING kafka OPTIONS (
  'subscribe' = 'page-views',
  'kafka.bootstrap.servers' = 'kafka:9092',
  'kafka.group.id' = 'rta-{job_name}-{query_version}',
  'startingOffsets' = 'earliest'
)
;

CREATE TABLE `kafka`.`shipments` USING kafka OPTIONS (
  'subscribe' = 'shipments',
  'kafka.bootstrap.servers' = 'kafka:9092',
  'kafka.group.id' = 'rta-{job_name}-{query_version}',
  'startingOffsets' = 'earliest'
)
;
