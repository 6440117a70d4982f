//! Imports that Confluent Schema Registry resolves by itself, so clients never register them.
//!
//! These are small equivalents written from the documented shape of the messages (field names,
//! numbers and types), enough for schemas that import them to compile and be compared.

pub(crate) const FILES: &[(&str, &str)] = &[
    (
        "confluent/meta.proto",
        r#"syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
option java_package = "io.confluent.protobuf";
option java_outer_classname = "MetaProto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
"#,
    ),
    (
        "confluent/type/decimal.proto",
        r#"syntax = "proto3";
package confluent.type;
option java_package = "io.confluent.protobuf.type";
option java_multiple_files = true;
option java_outer_classname = "DecimalProto";
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
"#,
    ),
    (
        "google/type/postal_address.proto",
        r#"syntax = "proto3";
package google.type;
message PostalAddress {
  int32 revision = 1;
  string region_code = 2;
  string language_code = 3;
  string postal_code = 4;
  string sorting_code = 5;
  string administrative_area = 6;
  string locality = 7;
  string sublocality = 8;
  repeated string address_lines = 9;
  repeated string recipients = 10;
  string organization = 11;
}
"#,
    ),
    (
        "google/type/date.proto",
        r#"syntax = "proto3";
package google.type;
message Date {
  int32 year = 1;
  int32 month = 2;
  int32 day = 3;
}
"#,
    ),
    (
        "google/type/timeofday.proto",
        r#"syntax = "proto3";
package google.type;
message TimeOfDay {
  int32 hours = 1;
  int32 minutes = 2;
  int32 seconds = 3;
  int32 nanos = 4;
}
"#,
    ),
    (
        "google/type/money.proto",
        r#"syntax = "proto3";
package google.type;
message Money {
  string currency_code = 1;
  int64 units = 2;
  int32 nanos = 3;
}
"#,
    ),
    (
        "google/type/latlng.proto",
        r#"syntax = "proto3";
package google.type;
message LatLng {
  double latitude = 1;
  double longitude = 2;
}
"#,
    ),
    (
        "google/type/dayofweek.proto",
        r#"syntax = "proto3";
package google.type;
enum DayOfWeek {
  DAY_OF_WEEK_UNSPECIFIED = 0;
  MONDAY = 1;
  TUESDAY = 2;
  WEDNESDAY = 3;
  THURSDAY = 4;
  FRIDAY = 5;
  SATURDAY = 6;
  SUNDAY = 7;
}
"#,
    ),
];
