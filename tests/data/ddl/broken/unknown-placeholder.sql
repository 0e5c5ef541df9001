-- expect: line 5: table orders: OPTIONS kafka.group.id: unknown placeholder {group_id}: option values may use {job_name}, {query_version}, {state_dir} and ${ENV_VAR} (the original tool's {group_id} was rta-{job_name}-{query_version})
CREATE TABLE orders USING kafka OPTIONS (
  'subscribe' = 'orders',
  'kafka.bootstrap.servers' = '${KAFKA_BROKERS}',
  'kafka.group.id' = '{group_id}',
  'kafka.client.id' = 'runner-{job_name}-v{query_version}'
);
