#pragma once
// Checks CLI11 runs on an option's text before converting it: a bad value becomes CLI11's one-line
// error ("--seed: must be a whole number ...") and exit code 1, like every other parse error.

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <set>
#include <string>

namespace inferscope::cli {

// A given path or text must not be empty ("--model ''" would otherwise mean "no model given").
inline const CLI::Validator kNotEmpty(
    [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "", "NOT_EMPTY");

// Unsigned options: CLI11 2.1 turns "-1" into 2^64 - 1 and 2^64 into 2^64 - 1 without a word.
inline const CLI::Validator kUnsigned(
    [](std::string& value) {
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (value.empty() || ec != std::errc() || end != value.data() + value.size())
            return std::string("must be a whole number from 0 to 18446744073709551615, got '") + value + "'";
        return std::string();
    },
    "", "UNSIGNED");

// Every option that takes a value refuses an empty one, except those named (where "" means
// something, like --prompt ""): CLI11 2.1 converts "" to 0 for numbers, so `--temperature ""`
// would have meant greedy.
inline void refuseEmptyValues(CLI::App& app, const std::set<std::string>& allowedEmpty) {
    for (CLI::App* sub : app.get_subcommands({}))
        for (CLI::Option* option : sub->get_options())
            if (option->get_type_size() > 0 && !allowedEmpty.contains(sub->get_name() + " " + option->get_name()))
                option->check(kNotEmpty);
}

}  // namespace inferscope::cli
