-- A Kafka sink writes the query's `value` column (and `key`, `topic`, `headers`,
-- `partition` when given); the queries write their row as JSON into `value`.

CREATE TABLE `kafka`.`expensive-orders` USING kafka OPTIONS (
  'topic' = 'expensive-orders',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`orders-per-minute` USING kafka OPTIONS (
  'topic' = 'orders-per-minute',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`revenue-by-country` USING kafka OPTIONS (
  'topic' = 'revenue-by-country',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`page-view-sessions` USING kafka OPTIONS (
  'topic' = 'page-view-sessions',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`failed-payments` USING kafka OPTIONS (
  'topic' = 'failed-payments',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`paid-orders` USING kafka OPTIONS (
  'topic' = 'paid-orders',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`late-shipments` USING kafka OPTIONS (
  'topic' = 'late-shipments',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`big-spenders` USING kafka OPTIONS (
  'topic' = 'big-spenders',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`orders-by-weekday` USING kafka OPTIONS (
  'topic' = 'orders-by-weekday',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;

CREATE TABLE `kafka`.`order-sizes` USING kafka OPTIONS (
  'topic' = 'order-sizes',
  'kafka.bootstrap.servers' = 'kafka:9092'
)
;
