// The GBNF checks that need the whole grammar (see gbnf.h; the parser's state in gbnf_parse.h):
// every rule used is defined, a root exists, no rule can reach itself before matching a character
// (left recursion, found in time linear in the grammar); and the rules laid out in the flat form
// the matcher reads.
#include "grammar/gbnf_parse.h"

namespace inferscope::grammar::gbnf_detail {

bool Parser::finish() {
    for (size_t r = 0; r < info_.size(); ++r)
        if (!info_[r].defined)
            return err(info_[r].offset, shownRule(g_.rules[r].name) + " is used but never defined");
    auto root = ids_.find("root");
    if (root == ids_.end() || !info_[root->second].defined) return err(s_.size(), "no rule named 'root'");
    g_.root = root->second;
    for (size_t r = 0; r < info_.size(); ++r) {
        auto [line, column] = lineColumn(info_[r].offset);
        g_.rules[r].line = line;
        g_.rules[r].column = column;
        for (Sequence& seq : info_[r].alternatives) {
            g_.rules[r].alternatives.push_back(uint32_t(g_.elements.size()));
            g_.elements.insert(g_.elements.end(), seq.begin(), seq.end());
            g_.elements.push_back({ElementKind::End, 0});
        }
        info_[r].alternatives.clear();
    }
    return checkLeftRecursion();
}

bool Parser::checkLeftRecursion() {
    const size_t n = g_.rules.size();
    // Which rules can match nothing, in time linear in the grammar (a fixpoint pass per newly
    // nullable rule would be quadratic in a chain of rules): each alternative made of rule
    // references only waits for that many of them to become nullable.
    std::vector<char> nullable(n, 0);
    std::vector<uint32_t> waiting;                       // per alternative: references not yet nullable
    std::vector<uint32_t> owner;                         // per alternative: its rule
    std::vector<std::vector<uint32_t>> usedIn(n);        // per rule: alternatives referring to it (once per reference)
    std::vector<uint32_t> queue;
    for (size_t r = 0; r < n; ++r)
        for (uint32_t a : g_.rules[r].alternatives) {
            uint32_t refs = 0, p = a;
            for (; g_.elements[p].kind == ElementKind::Rule; ++p) ++refs;
            if (g_.elements[p].kind != ElementKind::End) continue;  // a character: never empty
            const uint32_t alt = uint32_t(waiting.size());
            waiting.push_back(refs);
            owner.push_back(uint32_t(r));
            for (p = a; g_.elements[p].kind == ElementKind::Rule; ++p) usedIn[g_.elements[p].index].push_back(alt);
            if (refs == 0 && !nullable[r]) {
                nullable[r] = 1;
                queue.push_back(uint32_t(r));
            }
        }
    while (!queue.empty()) {
        const uint32_t t = queue.back();
        queue.pop_back();
        for (uint32_t alt : usedIn[t])
            if (--waiting[alt] == 0 && !nullable[owner[alt]]) {
                nullable[owner[alt]] = 1;
                queue.push_back(owner[alt]);
            }
    }
    // Edges r -> t where t can start r (after nullable rules only).
    std::vector<std::vector<uint32_t>> edges(n);
    for (size_t r = 0; r < n; ++r)
        for (uint32_t a : g_.rules[r].alternatives)
            for (uint32_t p = a; g_.elements[p].kind == ElementKind::Rule; ++p) {
                edges[r].push_back(g_.elements[p].index);
                if (!nullable[g_.elements[p].index]) break;
            }
    // Iterative depth-first search for a cycle.
    std::vector<uint8_t> colour(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;
    for (size_t start = 0; start < n; ++start) {
        if (colour[start]) continue;
        path.push_back({uint32_t(start), 0});
        colour[start] = 1;
        while (!path.empty()) {
            auto& [r, next] = path.back();
            if (next == edges[r].size()) {
                colour[r] = 2;
                path.pop_back();
                continue;
            }
            const uint32_t t = edges[r][next++];
            if (colour[t] == 0) {
                colour[t] = 1;
                path.push_back({t, 0});
            } else if (colour[t] == 1) {
                return reportCycle(path, t);
            }
        }
    }
    return true;
}

bool Parser::reportCycle(const std::vector<std::pair<uint32_t, size_t>>& path, uint32_t t) {
    size_t from = 0;
    while (path[from].first != t) ++from;
    for (size_t i = from; i < path.size(); ++i)
        if (info_[path[i].first].repetition)
            return err(info_[path[i].first].offset, "this repetition repeats something that can match nothing (left recursion)");
    uint32_t named = t;
    for (size_t i = from; i < path.size(); ++i)
        if (!info_[path[i].first].generated) {
            named = path[i].first;
            break;
        }
    return err(info_[named].offset, "left recursion: " + shownRule(g_.rules[named].name) +
                                           " can reach itself before matching any character");
}

}  // namespace inferscope::grammar::gbnf_detail
