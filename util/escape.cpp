// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/escape.hpp"

#include <fmt/format.h>

namespace leftover {

std::string escape_for_log(std::string_view raw) {
    std::string out;
    out.reserve(raw.size());
    for (const char c : raw) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte == '\\')
            out += "\\\\";
        else if (byte == '\'')
            out += "\\x27";  // names are logged as comm='...': a quote inside must not end it
        else if (byte >= 0x20 && byte < 0x7f)
            out += c;
        else
            out += fmt::format("\\x{:02x}", byte);
    }
    return out;
}

std::string file_name_part(std::string_view name) {
    std::string out(name);
    for (char& c : out)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            c = '_';
    return out;
}

std::string node_file_path(const std::string& spool_dir, std::string_view prefix, std::string_view node_name,
                           std::string_view suffix) {
    const bool slash = !spool_dir.empty() && spool_dir.back() == '/';
    std::string path = spool_dir + (slash ? "" : "/");
    path += prefix;
    path += file_name_part(node_name);
    path += suffix;
    return path;
}

}  // namespace leftover
