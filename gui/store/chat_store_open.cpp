// ChatStore::open: check, migrate, or fall back — never crash, never silently start empty.
//
//   file opens, passes quick_check, known version  -> WAL, migrations, ready (persistent)
//   not a database / fails quick_check             -> moved aside, new file, readable data recovered
//   locked by another program, unwritable folder   -> memory database for the session, readable
//                                                     conversations copied in, the file untouched
//   written by a newer version                     -> memory database, the file untouched
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "store/chat_store_sql.h"

namespace inferscope::store {
namespace {

using OpenReport = ChatStore::OpenReport;

QString tr(const char* text) {
    return QCoreApplication::translate("ChatStore", text);
}

enum class Outcome { Ready, Locked, Damaged, TooNew, Failed };
struct Probe {
    Outcome outcome = Outcome::Ready;
    QString detail;  // SQLite's words or the first quick_check finding
    int version = 0;
};

Probe classify(const QSqlError& error) {
    const Outcome outcome = isLockError(error) ? Outcome::Locked
                          : isDamageError(error) ? Outcome::Damaged
                                                 : Outcome::Failed;
    return {outcome, errorText(error)};
}

// Brings an open connection to a usable database of the current schema, or says why not. For a
// file: quick_check, refuse a newer version before writing anything, WAL, and a write-lock probe
// (another program holding the lock makes every later write fail: better to know now).
Probe prepare(const QSqlDatabase& db, bool isFile) {
    if (isFile) {
        QSqlQuery check(db);
        check.setForwardOnly(true);
        if (!check.exec(QStringLiteral("PRAGMA quick_check"))) return classify(check.lastError());
        QStringList problems;  // one row, or one row of many lines, per problem
        while (check.next()) {
            for (const QString& line : check.value(0).toString().split(QLatin1Char('\n'), Qt::SkipEmptyParts))
                if (line != QLatin1String("ok") && !line.startsWith(QLatin1String("***"))) problems << line;
        }
        if (check.lastError().isValid()) return classify(check.lastError());
        if (problems.size() == 1) return {Outcome::Damaged, problems.first()};
        if (problems.size() > 1)
            return {Outcome::Damaged, tr("%1, and %2 more problems").arg(problems.first()).arg(problems.size() - 1)};
    }
    QSqlError error;
    const QVariant version = scalar(db, QStringLiteral("PRAGMA user_version"), &error);
    if (!version.isValid()) return classify(error);
    if (version.toInt() > knownSchemaVersion()) return {Outcome::TooNew, {}, version.toInt()};
    if (isFile && !scalar(db, QStringLiteral("PRAGMA journal_mode = WAL"), &error).isValid())
        return classify(error);
    if (version.toInt() < knownSchemaVersion()) {
        QString step;
        if (!migrate(db, version.toInt(), &error, &step)) {
            Probe probe = classify(error);
            probe.detail = step + QStringLiteral(": ") + probe.detail;
            return probe;
        }
    }
    if (isFile) {
        WriteTransaction probe(db);  // rolled back at once
        if (!probe.began()) return classify(probe.error());
    }
    return {};
}

// Renames file (and its -wal, -shm, -journal companions: a stale WAL or hot journal beside the
// new database would be replayed into it) to "<file>.corrupt-<yyyyMMdd-hhmmss>".
QString moveAside(const QString& file, QString* error) {
    const QString stem = file + QStringLiteral(".corrupt-") +
                         QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss"));
    QString target = stem;
    for (int n = 2; QFileInfo::exists(target); ++n) target = stem + QStringLiteral("-%1").arg(n);
    QFile main(file);
    if (!main.rename(target)) {
        *error = main.errorString();
        return {};
    }
    for (const char* suffix : {"-wal", "-shm", "-journal"}) {
        QFile companion(file + QLatin1String(suffix));
        if (companion.exists() && !companion.rename(target + QLatin1String(suffix)) && !companion.remove()) {
            *error = tr("%1 could not be moved: %2").arg(companion.fileName(), companion.errorString());
            return {};
        }
    }
    return target;
}

// Copies what can be read from file into the open store (a damaged or a locked file).
CopyCounts copyFrom(const State& state, const QString& file, int busyTimeoutMs, const RawRows* raw = nullptr) {
    const QString name = state.connectionName + QStringLiteral("-source");
    QSqlError error;
    if (!openConnection(name, file, busyTimeoutMs, &error, ConnectionUse::RecoverySource)) return {};
    CopyCounts counts;
    {
        const QSqlDatabase source = QSqlDatabase::database(name, false);
        // A file locked against readers fails here at once instead of in every listing below.
        if (scalar(source, QStringLiteral("SELECT count(*) FROM sqlite_schema"), &error).isValid() ||
            !isLockError(error))
            counts = copyReadable(source, state.db(), raw);
    }
    closeConnection(name);
    return counts;
}

void noteCounts(OpenReport& report, const CopyCounts& counts) {
    report.conversationsFound = counts.conversationsFound;
    report.conversationsRecovered = counts.conversationsCopied;
    report.messagesRecovered = counts.messagesCopied;
    report.versionsRecovered = counts.versionsCopied;
}

// The session continues on a memory database; reason says why. Conversations readable from
// copyFromFile (if given) are copied in so the user still sees them.
OpenReport fallBack(State& state, const QString& reason, const QString& copyFromFile = {}) {
    OpenReport report;
    QSqlError error;
    if (!openConnection(state.connectionName, QStringLiteral(":memory:"), state.busyTimeoutMs, &error)) {
        report.message = reason + QLatin1Char(' ') +
                         tr("No conversations can be kept: %1.").arg(errorText(error));
        return report;
    }
    state.connected = true;
    if (const Probe probe = prepare(state.db(), false); probe.outcome != Outcome::Ready) {
        report.message = reason + QLatin1Char(' ') + tr("No conversations can be kept: %1.").arg(probe.detail);
        return report;
    }
    report.ok = true;
    report.message = reason;
    if (!copyFromFile.isEmpty()) {
        const CopyCounts counts = copyFrom(state, copyFromFile, std::min(state.busyTimeoutMs, 250));
        noteCounts(report, counts);
        if (counts.conversationsCopied > 0)
            report.message += QLatin1Char(' ') + tr("Its conversations were copied in for reading: "
                                                    "%1 of %2 conversations (%3 messages).")
                                                     .arg(counts.conversationsCopied)
                                                     .arg(counts.conversationsFound)
                                                     .arg(counts.messagesCopied);
    }
    report.message += QLatin1Char(' ') +
                      tr("Conversations of this session are kept in memory and will not be saved.");
    return report;
}

OpenReport recoverDamaged(State& state, const QString& file, const QString& problem) {
    QString error;
    const QString movedTo = moveAside(file, &error);
    if (movedTo.isEmpty())
        return fallBack(state, tr("The conversation database %1 is damaged (%2) and could not be moved "
                                  "aside: %3.").arg(QDir::toNativeSeparators(file), problem, error), file);
    QSqlError sqlError;
    Probe probe;
    probe.outcome = Outcome::Failed;
    if (openConnection(state.connectionName, file, state.busyTimeoutMs, &sqlError)) {
        state.connected = true;
        probe = prepare(state.db(), true);
    } else {
        probe.detail = errorText(sqlError);
    }
    const QString damaged = tr("The conversation database %1 was damaged (%2); it was moved to %3.")
                                .arg(QDir::toNativeSeparators(file), problem, QDir::toNativeSeparators(movedTo));
    if (probe.outcome != Outcome::Ready) {
        if (state.connected) closeConnection(state.connectionName);
        state.connected = false;
        OpenReport report = fallBack(state, damaged + QLatin1Char(' ') +
            tr("A new database could not be created there: %1.").arg(probe.detail), movedTo);
        report.movedTo = movedTo;
        return report;
    }
    const RawRows raw = scanLeafPages(movedTo);
    const CopyCounts counts = copyFrom(state, movedTo, state.busyTimeoutMs, &raw);
    OpenReport report;
    report.ok = report.persistent = state.persistent = true;
    report.movedTo = movedTo;
    noteCounts(report, counts);
    report.message = damaged + QLatin1Char(' ') +
                     tr("A new one was started: recovered %1 of %2 conversations (%3 messages).")
                         .arg(counts.conversationsCopied).arg(counts.conversationsFound).arg(counts.messagesCopied);
    if (counts.fromPages > 0)
        report.message += QLatin1Char(' ') + tr("%1 conversations and messages were read from the file's pages "
                                                "directly (SQLite could no longer reach them).").arg(counts.fromPages);
    if (const int lost = counts.messagesFound - counts.messagesCopied; lost > 0)
        report.message += QLatin1Char(' ') + tr("%1 messages could not be read.").arg(lost);
    if (counts.titlesLost > 0)
        report.message += QLatin1Char(' ') + tr("%1 conversations lost their titles and settings and are named "
                                                "\"Recovered conversation\".").arg(counts.titlesLost);
    if (counts.recordsDropped > 0)
        report.message += QLatin1Char(' ') +
                          tr("%1 answers were recovered without their per-token records.").arg(counts.recordsDropped);
    if (counts.versionsDamaged)
        report.message += QLatin1Char(' ') + tr("The table of the answers' other versions was damaged: %1 versions were "
                                                "recovered, others may be lost.").arg(counts.versionsCopied);
    else if (const int lost = counts.versionsFound - counts.versionsCopied; lost > 0)
        report.message += QLatin1Char(' ') + tr("%1 of the answers' %2 other versions could not be read.")
                                                 .arg(lost).arg(counts.versionsFound);
    if (counts.versionRecordsDropped > 0)
        report.message += QLatin1Char(' ') + tr("%1 other versions of answers were recovered without their per-token "
                                                "records.").arg(counts.versionRecordsDropped);
    return report;
}

OpenReport openFile(State& state, const QString& path) {
    const QString file = QFileInfo(path).absoluteFilePath();
    const QString folder = QFileInfo(file).absolutePath();
    const QString shown = QDir::toNativeSeparators(file);
    if (!QDir().mkpath(folder))
        return fallBack(state, tr("The folder for the conversation database cannot be created: %1.")
                                   .arg(QDir::toNativeSeparators(folder)));
    if (!QFileInfo(folder).isWritable())
        return fallBack(state, tr("The folder %1 is not writable, so the conversation database cannot be "
                                  "saved there.").arg(QDir::toNativeSeparators(folder)),
                        QFileInfo::exists(file) ? file : QString());
    if (QFileInfo::exists(file) && !QFileInfo(file).isWritable())
        return fallBack(state, tr("The conversation database %1 is read-only.").arg(shown), file);

    // Opening already reads the schema (for PRAGMA synchronous): a locked or damaged file may
    // fail here rather than in prepare().
    QSqlError error;
    Probe probe;
    if (openConnection(state.connectionName, file, state.busyTimeoutMs, &error)) {
        state.connected = true;
        probe = prepare(state.db(), true);
    } else {
        probe = classify(error);
    }
    if (probe.outcome == Outcome::Ready) {
        OpenReport report;
        report.ok = report.persistent = state.persistent = true;
        return report;
    }
    if (state.connected) closeConnection(state.connectionName);
    state.connected = false;
    switch (probe.outcome) {
    case Outcome::Locked:
        return fallBack(state, tr("The conversation database is locked by another program: %1 (%2).")
                                   .arg(shown, probe.detail), file);
    case Outcome::TooNew:
        return fallBack(state, tr("The conversation database %1 was written by a newer version of Inferscope "
                                  "(schema version %2; this version knows up to %3). It was left untouched.")
                                   .arg(shown).arg(probe.version).arg(knownSchemaVersion()));
    case Outcome::Damaged:
        return recoverDamaged(state, file, probe.detail);
    default:
        return fallBack(state, tr("The conversation database %1 could not be opened (%2); it was left "
                                  "untouched.").arg(shown, probe.detail));
    }
}

}  // namespace

ChatStore::OpenReport openStore(State& state, const QString& path) {
    state.path = path;
    state.persistent = false;
    if (path == QLatin1String(":memory:")) {
        OpenReport report = fallBack(state, {});
        if (report.ok) report.message.clear();  // a memory database was asked for: nothing to explain
        return report;
    }
    return openFile(state, path);
}

}  // namespace inferscope::store
