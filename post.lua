wrk.method="POST"
wrk.headers["content-type"]="application/vnd.schemaregistry.v1+json"
wrk.body=[[{"schema":"{\"type\":\"record\",\"name\":\"Seed0\",\"namespace\":\"com.example.events\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"},{\"name\":\"at\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}},{\"name\":\"f0\",\"type\":[\"null\",\"string\"],\"default\":null},{\"name\":\"f1\",\"type\":[\"null\",\"string\"],\"default\":null},{\"name\":\"f2\",\"type\":[\"null\",\"string\"],\"default\":null},{\"name\":\"f3\",\"type\":[\"null\",\"string\"],\"default\":null}]}"}]]
