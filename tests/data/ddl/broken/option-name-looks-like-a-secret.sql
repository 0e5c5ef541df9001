-- expect: line 3: table src: OPTIONS: key 'kafka.password...' is not allowed: option names use letters, digits, '.', '_' and '-' (at most 256)
CREATE TABLE src USING kafka
OPTIONS ('kafka.password=S3CR3T' 'x', subscribe 'orders')
