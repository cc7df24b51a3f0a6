// SPDX-License-Identifier: GPL-2.0-or-later
#include "metrics/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <span>
#include <vector>

namespace leftover {
namespace {

constexpr std::array<std::string_view, 4> kTriggerWords = {"step", "epilog", "sweep", "check"};
constexpr std::array<std::string_view, 7> kFailureWords = {"config",         "users_file", "step_socket", "controller",
                                                           "account_lookup", "deadline",   "proc"};
constexpr std::array<std::string_view, 3> kDrainWords = {"drained", "kept", "failed"};
constexpr std::array<std::string_view, 4> kTurnWords = {"free", "waited", "missed", "alone"};
constexpr std::array<std::string_view, 2> kAnswerWords = {"asked", "shared"};
constexpr std::array<std::string_view, 2> kSignalWords = {"SIGTERM", "SIGKILL"};
// Every reason but stray (a stray is killed, not kept), in the log's words.
constexpr auto kKeptWords = [] {
    std::array<std::string_view, kReasonWords.size() - 1> words{};
    std::size_t n = 0;
    for (const ReasonWord& entry : kReasonWords)
        if (entry.reason != Reason::stray) words[n++] = entry.word;
    return words;
}();

struct Family {
    std::string_view name;
    std::string_view type;  // "counter" or "gauge"
    std::string_view help;
    std::string_view label;                     // empty: no label
    std::span<const std::string_view> words{};  // the label's values; empty with a label: any (user names)
};

constexpr std::string_view kUserFamily = "leftover_user_processes_killed_total";

constexpr Family kFamilies[] = {
    {"leftover_evaluations_total", "counter",
     "Evaluations, by what started them: step (a job step ended), epilog (a job ended), sweep (leftover sweep), "
     "check (leftover check).",
     "trigger", kTriggerWords},
    {"leftover_processes_killed_total", "counter",
     "Stray processes signalled, by the last signal each got (SIGKILL: it outlived SIGTERM and grace, or grace is 0).",
     "signal", kSignalWords},
    {"leftover_processes_kept_total", "counter",
     "Processes kept by the first decision of each evaluation, by reason (the words of the log).", "reason",
     kKeptWords},
    {"leftover_users_swept_total", "counter", "Users whose stray processes were signalled, summed over evaluations.",
     ""},
    {"leftover_lookup_errors_total", "counter",
     "Evaluations that killed nothing (or stopped) on an error, by kind: config, users_file, step_socket, "
     "controller, account_lookup, deadline, proc.",
     "kind", kFailureWords},
    {"leftover_survivors_total", "counter", "Stray processes still there when a sweep gave up (not in a dry run).", ""},
    {"leftover_node_drains_total", "counter",
     "Requests to drain this node after a sweep left survivors (drain_on_survivors) or after failed health checks "
     "(check --health --drain), by result: drained, kept (already drained, draining or down: its reason kept), "
     "failed (slurmctld could not be asked or refused).",
     "result", kDrainWords},
    {"leftover_sweep_turns_total", "counter",
     "Sweeps whose first plan would signal (not dry runs nor checks), by how they got their turn on the node: "
     "free (no other sweep held it), waited (after another sweep of the node), missed (another held it until the "
     "deadline: nothing signalled), alone (the lock file could not be used: swept without taking turns).",
     "turn", kTurnWords},
    {"leftover_slurmctld_answers_total", "counter",
     "slurmctld's answers about the jobs on this host's nodes that evaluations used, by how each got its answer: "
     "asked (a question of its own), shared (another sweep of the node had asked at most 1 s before).",
     "answer", kAnswerWords},
    {"leftover_last_evaluation_timestamp_seconds", "gauge",
     "When the last evaluation ended, in seconds since the epoch.", ""},
    {"leftover_last_evaluation_duration_seconds", "gauge", "How long the last evaluation took, in seconds.", ""},
    {"leftover_last_strays_found", "gauge",
     "Stray processes the last evaluation found (killed, or would kill in a check or dry run).", ""},
    {"leftover_last_evaluation_failed", "gauge", "1 when the last evaluation hit an error and killed nothing more.",
     ""},
    {kUserFamily, "counter", "Stray processes signalled, by user (only with metrics_users: true).", "user"},
};

const Family* family_named(std::string_view name) {
    for (const Family& family : kFamilies)
        if (family.name == name) return &family;
    return nullptr;
}

template <std::size_t N>
const char* word_of(std::size_t index, const std::array<std::string_view, N>& words) {
    return index < N ? words[index].data() : "?";  // each word is a literal, so data() ends in NUL
}

// A label value as the text format writes it: backslash, double quote and newline escaped.
std::string escape_label(std::string_view value) {
    std::string out;
    for (const char c : value) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string number_text(double value) { return fmt::format("{}", value); }

struct ParsedLine {
    std::string family;
    std::string label_value;
    double value = 0;
};

// `name{label="value"} number` or `name number`; the error says what is wrong.
Result<ParsedLine, std::string> parse_sample(std::string_view line) {
    ParsedLine out;
    const auto name_end = line.find_first_of("{ ");
    if (name_end == std::string_view::npos) return std::string("no value");
    out.family = std::string(line.substr(0, name_end));
    const Family* family = family_named(out.family);
    if (family == nullptr) return fmt::format("unknown metric '{}'", out.family);
    std::string_view rest = line.substr(name_end);
    if (rest.front() == '{') {
        if (family->label.empty()) return fmt::format("{} has no label", family->name);
        const std::string open = fmt::format("{{{}=\"", family->label);
        if (!rest.starts_with(open)) return fmt::format("{} takes only the label {}", family->name, family->label);
        std::size_t i = open.size();
        for (; i < rest.size() && rest[i] != '"'; ++i) {
            if (rest[i] != '\\') {
                out.label_value += rest[i];
                continue;
            }
            if (++i == rest.size()) break;
            if (rest[i] == 'n')
                out.label_value += '\n';
            else if (rest[i] == '\\' || rest[i] == '"')
                out.label_value += rest[i];
            else
                return std::string("a bad escape in a label value");
        }
        if (i + 1 >= rest.size() || rest[i + 1] != '}') return std::string("an unterminated label");
        rest = rest.substr(i + 2);
        if (!family->words.empty() &&
            std::find(family->words.begin(), family->words.end(), out.label_value) == family->words.end())
            return fmt::format("{}: unknown {} '{}'", family->name, family->label, out.label_value);
        if (out.label_value.empty()) return fmt::format("{}: an empty {}", family->name, family->label);
    } else if (!family->label.empty()) {
        return fmt::format("{} needs the label {}", family->name, family->label);
    }
    if (!rest.starts_with(' ')) return std::string("no value");
    const std::string value_text(rest.substr(1));
    const char* end = value_text.data() + value_text.size();
    const auto [used, error] = std::from_chars(value_text.data(), end, out.value);
    if (error != std::errc{} || used != end || !std::isfinite(out.value))
        return fmt::format("'{}' is not a number", value_text);
    if (family->type == "counter" && out.value < 0) return fmt::format("{} is negative", family->name);
    return out;
}

// "# HELP name ..." and "# TYPE name type" of a family we know, with our type.
bool is_our_comment(std::string_view line) {
    for (const Family& family : kFamilies) {
        if (line == fmt::format("# TYPE {} {}", family.name, family.type)) return true;
        if (line.starts_with(fmt::format("# HELP {} ", family.name))) return true;
    }
    return false;
}

}  // namespace

const char* to_string(MetricsTrigger trigger) { return word_of(static_cast<std::size_t>(trigger), kTriggerWords); }
const char* to_string(DrainResult result) { return word_of(static_cast<std::size_t>(result), kDrainWords); }
const char* to_string(SweepTurn turn) { return word_of(static_cast<std::size_t>(turn), kTurnWords); }

const char* failure_label(ErrorSource source) {
    switch (source) {
        case ErrorSource::config: return "config";
        case ErrorSource::users_file: return "users_file";
        case ErrorSource::step_socket: return "step_socket";
        case ErrorSource::controller: return "controller";
        case ErrorSource::account_lookup: return "account_lookup";
        case ErrorSource::deadline: return "deadline";
        case ErrorSource::other:
        case ErrorSource::proc: return "proc";
    }
    return "proc";
}

Metrics::Metrics() {
    for (const Family& family : kFamilies) {
        auto& values = series_[std::string(family.name)];
        if (family.label.empty()) values[""] = 0;
        for (const std::string_view word : family.words) values[std::string(word)] = 0;
    }
}

double Metrics::value(std::string_view family, std::string_view label_value) const {
    const auto found = series_.find(std::string(family));
    if (found == series_.end()) return 0;
    const auto value = found->second.find(std::string(label_value));
    return value == found->second.end() ? 0 : value->second;
}

void Metrics::add(const EvaluationSample& s) {
    const auto bump = [this](std::string_view family, std::string_view label, double by) {
        series_[std::string(family)][std::string(label)] += by;
    };
    const auto set = [this](std::string_view family, double to) { series_[std::string(family)][""] = to; };
    if (!s.evaluation) {
        if (s.drain) bump("leftover_node_drains_total", to_string(*s.drain), 1);
        return;
    }
    bump("leftover_evaluations_total", to_string(s.trigger), 1);
    bump("leftover_processes_killed_total", "SIGTERM", static_cast<double>(s.killed_sigterm));
    bump("leftover_processes_killed_total", "SIGKILL", static_cast<double>(s.killed_sigkill));
    for (const auto& [reason, count] : s.kept)
        if (reason != Reason::stray)
            bump("leftover_processes_kept_total", to_string(reason), static_cast<double>(count));
    bump("leftover_users_swept_total", "", static_cast<double>(s.users_swept));
    if (s.failure) bump("leftover_lookup_errors_total", failure_label(*s.failure), 1);
    bump("leftover_survivors_total", "", static_cast<double>(s.survivors));
    if (s.drain) bump("leftover_node_drains_total", to_string(*s.drain), 1);
    if (s.turn) bump("leftover_sweep_turns_total", to_string(*s.turn), 1);
    bump("leftover_slurmctld_answers_total", "asked", static_cast<double>(s.answers_asked));
    bump("leftover_slurmctld_answers_total", "shared", static_cast<double>(s.answers_shared));
    set("leftover_last_evaluation_timestamp_seconds", s.timestamp_seconds);
    set("leftover_last_evaluation_duration_seconds", s.duration_seconds);
    set("leftover_last_strays_found", static_cast<double>(s.strays_found));
    set("leftover_last_evaluation_failed", s.failure ? 1 : 0);
    for (const auto& [user, count] : s.killed_by_user)
        if (!user.empty()) bump(kUserFamily, user, static_cast<double>(count));
}

std::string Metrics::render(bool users) const {
    std::string out;
    for (const Family& family : kFamilies) {
        const auto found = series_.find(std::string(family.name));
        const bool empty = found == series_.end() || found->second.empty();
        if (family.name == kUserFamily && (!users || empty)) continue;
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family.name, family.help, family.name, family.type);
        if (empty) continue;
        // Fixed words in their documented order; user names sorted (the map's order).
        std::vector<std::string> labels;
        for (const std::string_view word : family.words) labels.emplace_back(word);
        if (family.words.empty())
            for (const auto& [label, value] : found->second) labels.push_back(label);
        for (const std::string& label : labels) {
            const auto value = found->second.find(label);
            if (value == found->second.end()) continue;
            if (family.label.empty())
                out += fmt::format("{} {}\n", family.name, number_text(value->second));
            else
                out += fmt::format("{}{{{}=\"{}\"}} {}\n", family.name, family.label, escape_label(label),
                                   number_text(value->second));
        }
    }
    return out;
}

Result<Metrics> Metrics::parse(std::string_view text) {
    if (text.empty()) return Error::lookup("empty", ErrorSource::other);
    if (!text.ends_with('\n')) return Error::lookup("the last line is cut off", ErrorSource::other);
    Metrics metrics;
    std::size_t line_number = 0;
    std::map<std::string, std::map<std::string, bool>> seen;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (line.starts_with('#')) {
            if (!is_our_comment(line))
                return Error::lookup(fmt::format("line {}: not a line leftover writes", line_number),
                                     ErrorSource::other);
            continue;
        }
        auto sample = parse_sample(line);
        if (!sample.ok())
            return Error::lookup(fmt::format("line {}: {}", line_number, sample.error()), ErrorSource::other);
        if (seen[sample->family][sample->label_value])
            return Error::lookup(fmt::format("line {}: {} appears twice", line_number, sample->family),
                                 ErrorSource::other);
        seen[sample->family][sample->label_value] = true;
        metrics.series_[sample->family][sample->label_value] = sample->value;
    }
    return metrics;
}

}  // namespace leftover
