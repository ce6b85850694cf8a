"""Which behaviour of `autograder/rubric.py` each hidden check belongs to: {item: {behaviour id: checks}}.

Kept here, beside the hidden checks, because their names must not reach the student package;
the behaviours, their points and the visible checks are in `autograder/rubric.py`.
"""

HIDDEN_CHECKS = {
    "underflow_fraction": {
        "counts_flushed_nonzero": ("test_rounding_edge_at_two_to_minus_25",),
        "uses_dtype": ("test_random_magnitudes",),
        "nan_inf_nonzero": ("test_nan_and_inf_count_as_nonzero",),
        "python_float": ("test_empty_tensor", "test_returns_float_when_everything_underflows"),
        "any_shape_input_kept": ("test_matrix_input_and_zeros", "test_input_is_not_modified"),
    },
    "static_loss_scaler": {
        "scale": ("test_custom_scale",),
        "unscale_divides": ("test_every_gradient_is_unscaled_after_an_overflow", "test_random_gradients_match_reference",
                            "test_fp16_gradients", "test_random_scenarios_divide"),
        "overflow": ("test_nonfinite_values_are_overflow", "test_large_finite_gradients_are_not_overflow",
                     "test_random_scenarios_report"),
        "edge_cases": ("test_generator_is_read_once", "test_no_gradients"),
    },
    "dynamic_loss_scaler": {
        "backoff": ("test_backoff_with_other_factors",),
        "no_minimum": ("test_no_minimum_scale",),
        "growth": ("test_random_sequences", "test_overflow_resets_the_clean_count",
                   "test_two_scalers_keep_their_own_count"),
        "defaults": ("test_default_growth_interval",),
        "inherits": ("test_dynamic_unscale_on_generator",),
    },
    "master_weights": {
        "fp32_leaves": ("test_masters_match_reference", "test_masters_are_a_sequence", "test_model_is_left_as_it_was",
                        "test_random_models_masters"),
        "separate_copies": ("test_fp32_model_masters_are_copies",),
        "grads_to_fp32": ("test_grads_match_reference", "test_random_models_grads"),
        "copy_back_any_dtype": ("test_copy_back_matches_reference", "test_random_models_copy_back"),
    },
    "accumulate_gradients": {
        "full_batch_gradient": ("test_float32_model_matches_reference",),
        "any_split": ("test_matches_full_batch", "test_random_scenarios"),
        "micro_batches": ("test_one_micro_batch_graph_at_a_time",),
        "stale_discarded": ("test_weights_are_not_changed",),
        "mean_loss": ("test_float_return_type",),
    },
    "mixed_precision_train_step": {
        "clean_step": ("test_steps_match_reference",),
        "masters_keep_updates": ("test_masters_keep_updates_too_small_for_fp16",),
        "loss_scaling": ("test_tiny_gradients_survive",),
        "micro_batches": ("test_micro_batch_limit_and_parameters_kept", "test_one_micro_batch_graph_at_a_time"),
        "overflow_skips": ("test_overflow_changes_nothing",),
        "any_run": ("test_random_scenarios",),
        "clip_after_unscale": ("test_clipping_happens_after_unscaling",),
        "scale_update": ("test_update_once_per_call_and_growth",),
        "stale_grads": ("test_stale_gradients_do_not_matter",),
        "integer_inputs": ("test_integer_inputs_stay_integers",),
    },
    "token_accumulation": {
        "token_weighting": ("test_matches_full_batch", "test_float32_model_matches_reference", "test_random_scenarios"),
        "micro_batches": ("test_one_micro_batch_graph_at_a_time",),
        "empty_batch": ("test_empty_batch_raises_value_error",),
        "weights_unchanged": ("test_weights_are_not_changed",),
    },
    "q5_answer": {
        "right_letter": ("test_answer_is_right",),
    },
}


def hidden_check_map() -> dict:
    """{item: {hidden check function: behaviour id}}, as backends.Reference takes it."""
    return {item: {check: b for b, checks in by_behaviour.items() for check in checks}
            for item, by_behaviour in HIDDEN_CHECKS.items()}
