create table `kafka`.`expensive-orders` (
    `order_id` BIGINT,
    `price` DECIMAL(32, 2),
    `buyer_id` BIGINT,
    `order_time` TIMESTAMP(3),
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'expensive-orders',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`orders-per-minute` (
    `window_start` TIMESTAMP(3),
    `window_end` TIMESTAMP(3),
    `orders` BIGINT,
    `revenue` DECIMAL(38, 2),
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'orders-per-minute',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`revenue-by-country` (
    `country` STRING,
    `window_start` TIMESTAMP(3),
    `revenue` DECIMAL(38, 2),
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'revenue-by-country',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`page-view-sessions` (
    `user_id` BIGINT,
    `session_start` TIMESTAMP(3),
    `session_end` TIMESTAMP(3),
    `views` BIGINT,
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'page-view-sessions',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`failed-payments` (
    `payment_id` STRING,
    `order_id` BIGINT,
    `amount` DOUBLE,
    `pay_time` TIMESTAMP(3),
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'failed-payments',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`paid-orders` (
    `order_id` BIGINT,
    `price` DECIMAL(32, 2),
    `payment_id` STRING,
    `pay_time` TIMESTAMP(3),
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'paid-orders',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`late-shipments` (
    `shipment_id` STRING,
    `order_id` BIGINT,
    `hours_late` INT,
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'late-shipments',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`big-spenders` (
    `window_start` TIMESTAMP(3),
    `window_end` TIMESTAMP(3),
    `buyer_id` BIGINT,
    `spent` DECIMAL(38, 2),
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'big-spenders',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`orders-by-weekday` (
    `order_id` BIGINT,
    `country` STRING,
    `weekday` STRING,
    `size` STRING,
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'orders-by-weekday',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;

create table `kafka`.`order-sizes` (
    `id` BIGINT,
    `name` STRING,
    `__create_timestamp`       TIMESTAMP(3),
    `__query_name`             STRING,
    `__query_description`      STRING,
    `__query_id`               STRING,
    `__query_version`          INT,
    `__query_create_timestamp` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'format' = 'json',
  'topic' = 'order-sizes',
  'sink.delivery-guarantee' = 'at-least-once',
  'properties.bootstrap.servers' = 'kafka:9092'
)
;
