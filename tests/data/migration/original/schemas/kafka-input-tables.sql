create table `kafka`.`orders` (
    `order_id`   BIGINT,
    `price`      DECIMAL(32, 2),
    `buyer_id`   BIGINT,
    `country`    STRING,
    `order_time` TIMESTAMP(3),
    WATERMARK FOR `order_time` AS `order_time` - INTERVAL '5' SECOND
) with (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = '{group_id}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
)
;

create table `kafka`.`payments` (
    `payment_id` STRING,
    `order_id`   BIGINT,
    `amount`     DECIMAL(32, 2),
    `status`     STRING,
    `pay_time`   TIMESTAMP(3),
    WATERMARK FOR `pay_time` AS `pay_time` - INTERVAL '5' SECOND
) with (
  'connector' = 'kafka',
  'topic' = 'payments',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = '{group_id}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
)
;

create table `kafka`.`page-views` (
    `user_id`   BIGINT,
    `url`       STRING,
    `view_time` TIMESTAMP(3),
    WATERMARK FOR `view_time` AS `view_time` - INTERVAL '10' SECOND
) with (
  'connector' = 'kafka',
  'topic' = 'page-views',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = '{group_id}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
)
;

create table `kafka`.`shipments` (
    `shipment_id`  STRING,
    `order_id`     BIGINT,
    `promised_at`  TIMESTAMP(3),
    `delivered_at` TIMESTAMP(3)
) with (
  'connector' = 'kafka',
  'topic' = 'shipments',
  'properties.bootstrap.servers' = 'kafka:9092',
  'properties.group.id' = '{group_id}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
)
;
