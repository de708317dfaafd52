#include "engine/engine_group.h"

#include <fmt/format.h>

namespace inferscope {

EngineGroup::~EngineGroup() {
    // The sessions' contexts and model go on the thread that computed with them.
    passes_->run([this] {
        passes_->forgetMembers();
        sessions_.clear();
    });
}

int32_t EngineGroup::totalContext() const {
    int32_t total = 0;
    for (const auto& s : sessions_) total += s->contextLength();
    return total;
}

Result<std::unique_ptr<EngineGroup>> EngineGroup::load(const EngineOptions& options, int32_t sessions, std::chrono::microseconds gather,
                                                       const LoadProgress& progress) {
    if (sessions < 1 || sessions > 64) return fail(ErrorKind::InvalidArgument, fmt::format("sessions must be 1 to 64, got {}", sessions));
    constexpr int32_t kMinPerSession = 16;
    if (options.contextLength > 0 && options.contextLength / sessions < kMinPerSession)
        return fail(ErrorKind::InvalidArgument,
                    fmt::format("a context of {} tokens split among {} slots leaves {} each; give at least {}", options.contextLength,
                                sessions, options.contextLength / sessions, kMinPerSession * sessions));
    std::unique_ptr<EngineGroup> group(new EngineGroup());
    group->passes_ = std::make_unique<SharedPasses>(gather);
    Result<void> made;
    group->passes_->run([&] {
        // The first session is loaded with its share when the budget is given; with the default,
        // the total is what load chooses, and the first session's cache is cut to its share.
        EngineOptions first = options;
        if (options.contextLength > 0) first.contextLength = options.contextLength / sessions;
        auto loaded = Engine::load(first, progress);
        if (!loaded) {
            made = std::unexpected(loaded.error());
            return;
        }
        std::unique_ptr<Engine> engine = std::move(*loaded);
        const int32_t share = options.contextLength > 0 ? first.contextLength : engine->contextLength() / sessions;
        if (share < kMinPerSession) {
            made = fail(ErrorKind::InvalidArgument, fmt::format("a context of {} tokens split among {} slots leaves {} each",
                                                                engine->contextLength(), sessions, share));
            return;
        }
        if (auto ok = engine->setContextLength(share); !ok) {
            made = std::unexpected(ok.error());
            return;
        }
        engine->passes_ = group->passes_.get();  // its passes too run here, batched with the others'
        group->sessions_.push_back(std::move(engine));
        for (int32_t i = 1; i < sessions; ++i) {
            auto session = group->sessions_[0]->newSession(share, group->passes_.get());
            if (!session) {
                made = std::unexpected(session.error());
                return;
            }
            group->sessions_.push_back(std::move(*session));
        }
        // A prompt may start from the longest prefix any session's cache holds (a shared system
        // prompt, a conversation continued on another slot).
        for (auto& s : group->sessions_) group->passes_->addMember(*s->context_);
    });
    if (!made) return std::unexpected(made.error());
    return group;
}

}  // namespace inferscope
