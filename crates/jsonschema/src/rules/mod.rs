//! Every JSON Schema rule, one module per keyword. `rules()` lists them in catalog order.

use covenant_engine::RuleSpec;

pub mod additional_items;
pub mod additional_properties;
pub mod combined_type;
pub mod dependency_array;
pub mod dependency_schema;
pub mod dialect_undeclared;
pub mod enum_array;
pub mod exclusive_maximum;
pub mod exclusive_minimum;
pub mod item_added;
pub mod item_removed;
pub mod max_contains;
pub mod max_items;
pub mod max_length;
pub mod max_properties;
pub mod maximum;
pub mod metadata;
pub mod min_contains;
pub mod min_items;
pub mod min_length;
pub mod min_properties;
pub mod minimum;
pub mod multiple_of;
pub mod not_type;
pub mod pattern;
pub mod product_type;
pub mod property_added;
pub mod property_removed;
pub mod required_attribute;
pub mod schema;
pub mod sum_type;
pub mod types;
pub mod unevaluated_items;
pub mod unevaluated_properties;
pub mod unique_items;

static ALL: &[&RuleSpec] = &[
    &metadata::ID_CHANGED,
    &metadata::TITLE_CHANGED,
    &metadata::DESCRIPTION_CHANGED,
    &metadata::DEFAULT_CHANGED,
    &schema::SCHEMA_ADDED,
    &schema::SCHEMA_REMOVED,
    &types::TYPE_CHANGED,
    &types::TYPE_NARROWED,
    &types::TYPE_EXTENDED,
    &max_length::MAX_LENGTH_ADDED,
    &max_length::MAX_LENGTH_REMOVED,
    &max_length::MAX_LENGTH_DECREASED,
    &max_length::MAX_LENGTH_INCREASED,
    &min_length::MIN_LENGTH_ADDED,
    &min_length::MIN_LENGTH_REMOVED,
    &min_length::MIN_LENGTH_INCREASED,
    &min_length::MIN_LENGTH_DECREASED,
    &maximum::MAXIMUM_ADDED,
    &maximum::MAXIMUM_REMOVED,
    &maximum::MAXIMUM_DECREASED,
    &maximum::MAXIMUM_INCREASED,
    &minimum::MINIMUM_ADDED,
    &minimum::MINIMUM_REMOVED,
    &minimum::MINIMUM_INCREASED,
    &minimum::MINIMUM_DECREASED,
    &exclusive_maximum::EXCLUSIVE_MAXIMUM_ADDED,
    &exclusive_maximum::EXCLUSIVE_MAXIMUM_REMOVED,
    &exclusive_maximum::EXCLUSIVE_MAXIMUM_DECREASED,
    &exclusive_maximum::EXCLUSIVE_MAXIMUM_INCREASED,
    &exclusive_minimum::EXCLUSIVE_MINIMUM_ADDED,
    &exclusive_minimum::EXCLUSIVE_MINIMUM_REMOVED,
    &exclusive_minimum::EXCLUSIVE_MINIMUM_INCREASED,
    &exclusive_minimum::EXCLUSIVE_MINIMUM_DECREASED,
    &max_properties::MAX_PROPERTIES_ADDED,
    &max_properties::MAX_PROPERTIES_REMOVED,
    &max_properties::MAX_PROPERTIES_DECREASED,
    &max_properties::MAX_PROPERTIES_INCREASED,
    &min_properties::MIN_PROPERTIES_ADDED,
    &min_properties::MIN_PROPERTIES_REMOVED,
    &min_properties::MIN_PROPERTIES_INCREASED,
    &min_properties::MIN_PROPERTIES_DECREASED,
    &max_items::MAX_ITEMS_ADDED,
    &max_items::MAX_ITEMS_REMOVED,
    &max_items::MAX_ITEMS_DECREASED,
    &max_items::MAX_ITEMS_INCREASED,
    &min_items::MIN_ITEMS_ADDED,
    &min_items::MIN_ITEMS_REMOVED,
    &min_items::MIN_ITEMS_INCREASED,
    &min_items::MIN_ITEMS_DECREASED,
    &max_contains::MAX_CONTAINS_ADDED,
    &max_contains::MAX_CONTAINS_REMOVED,
    &max_contains::MAX_CONTAINS_DECREASED,
    &max_contains::MAX_CONTAINS_INCREASED,
    &min_contains::MIN_CONTAINS_ADDED,
    &min_contains::MIN_CONTAINS_REMOVED,
    &min_contains::MIN_CONTAINS_INCREASED,
    &min_contains::MIN_CONTAINS_DECREASED,
    &pattern::PATTERN_ADDED,
    &pattern::PATTERN_REMOVED,
    &pattern::PATTERN_CHANGED,
    &multiple_of::MULTIPLE_OF_ADDED,
    &multiple_of::MULTIPLE_OF_REMOVED,
    &multiple_of::MULTIPLE_OF_EXPANDED,
    &multiple_of::MULTIPLE_OF_REDUCED,
    &multiple_of::MULTIPLE_OF_CHANGED,
    &required_attribute::REQUIRED_ATTRIBUTE_ADDED,
    &required_attribute::REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED,
    &required_attribute::REQUIRED_ATTRIBUTE_REMOVED,
    &additional_properties::ADDITIONAL_PROPERTIES_ADDED,
    &additional_properties::ADDITIONAL_PROPERTIES_REMOVED,
    &additional_properties::ADDITIONAL_PROPERTIES_NARROWED,
    &additional_properties::ADDITIONAL_PROPERTIES_EXTENDED,
    &unevaluated_properties::UNEVALUATED_PROPERTIES_ADDED,
    &unevaluated_properties::UNEVALUATED_PROPERTIES_REMOVED,
    &unevaluated_properties::UNEVALUATED_PROPERTIES_NARROWED,
    &unevaluated_properties::UNEVALUATED_PROPERTIES_EXTENDED,
    &dependency_array::DEPENDENCY_ARRAY_ADDED,
    &dependency_array::DEPENDENCY_ARRAY_REMOVED,
    &dependency_array::DEPENDENCY_ARRAY_EXTENDED,
    &dependency_array::DEPENDENCY_ARRAY_NARROWED,
    &dependency_array::DEPENDENCY_ARRAY_CHANGED,
    &dependency_schema::DEPENDENCY_SCHEMA_ADDED,
    &dependency_schema::DEPENDENCY_SCHEMA_REMOVED,
    &property_added::REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
    &property_added::REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL,
    &property_added::OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
    &property_added::PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL,
    &property_added::REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL,
    &property_added::REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL,
    &property_added::OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL,
    &property_added::PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &property_added::PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &property_removed::PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL,
    &property_removed::PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL,
    &property_removed::PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL,
    &property_removed::PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &property_removed::PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &unique_items::UNIQUE_ITEMS_ADDED,
    &unique_items::UNIQUE_ITEMS_REMOVED,
    &additional_items::ADDITIONAL_ITEMS_ADDED,
    &additional_items::ADDITIONAL_ITEMS_REMOVED,
    &additional_items::ADDITIONAL_ITEMS_NARROWED,
    &additional_items::ADDITIONAL_ITEMS_EXTENDED,
    &unevaluated_items::UNEVALUATED_ITEMS_ADDED,
    &unevaluated_items::UNEVALUATED_ITEMS_REMOVED,
    &unevaluated_items::UNEVALUATED_ITEMS_NARROWED,
    &unevaluated_items::UNEVALUATED_ITEMS_EXTENDED,
    &item_added::ITEM_ADDED_TO_OPEN_CONTENT_MODEL,
    &item_added::ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL,
    &item_added::ITEM_ADDED_TO_CLOSED_CONTENT_MODEL,
    &item_added::ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &item_added::ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &item_removed::ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL,
    &item_removed::ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL,
    &item_removed::ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL,
    &item_removed::ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &item_removed::ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    &enum_array::ENUM_ARRAY_EXTENDED,
    &enum_array::ENUM_ARRAY_NARROWED,
    &enum_array::ENUM_ARRAY_CHANGED,
    &combined_type::COMBINED_TYPE_EXTENDED,
    &combined_type::COMBINED_TYPE_CHANGED,
    &combined_type::COMBINED_TYPE_SUBSCHEMAS_CHANGED,
    &product_type::PRODUCT_TYPE_EXTENDED,
    &product_type::PRODUCT_TYPE_NARROWED,
    &sum_type::SUM_TYPE_EXTENDED,
    &sum_type::SUM_TYPE_NARROWED,
    &not_type::NOT_TYPE_EXTENDED,
    &not_type::NOT_TYPE_NARROWED,
    &dialect_undeclared::DIALECT_UNDECLARED,
];

/// Every JSON Schema rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    ALL
}

/// Whether a Confluent difference type is compatible under a policy.
pub fn is_compatible(id: &str, policy: covenant_engine::JsonPolicy) -> bool {
    const STRICT: &[&str] = &[
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "DEFAULT_CHANGED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "DESCRIPTION_CHANGED",
        "ENUM_ARRAY_EXTENDED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "ID_CHANGED",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MAX_CONTAINS_INCREASED",
        "MAX_CONTAINS_REMOVED",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "MIN_CONTAINS_DECREASED",
        "MIN_CONTAINS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "NOT_TYPE_NARROWED",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PATTERN_REMOVED",
        "PRODUCT_TYPE_NARROWED",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "SCHEMA_REMOVED",
        "SUM_TYPE_EXTENDED",
        "TITLE_CHANGED",
        "TYPE_EXTENDED",
        "UNEVALUATED_ITEMS_ADDED",
        "UNEVALUATED_ITEMS_EXTENDED",
        "UNEVALUATED_PROPERTIES_ADDED",
        "UNEVALUATED_PROPERTIES_EXTENDED",
        "UNIQUE_ITEMS_REMOVED",
    ];
    const LENIENT_EXTRA: &[&str] = &[
        "ADDITIONAL_PROPERTIES_NARROWED",
        "ADDITIONAL_PROPERTIES_REMOVED",
        "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
        "UNEVALUATED_PROPERTIES_NARROWED",
        "UNEVALUATED_PROPERTIES_REMOVED",
    ];
    STRICT.contains(&id)
        || (policy == covenant_engine::JsonPolicy::Lenient && LENIENT_EXTRA.contains(&id))
}

#[cfg(test)]
pub(crate) mod test_support;
