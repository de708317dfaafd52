#pragma once
// QmlSingleton<T>: how a C++ object the app builds becomes a QML singleton (QML_SINGLETON).
// QML asks T::create() for the singleton when a file first names it; the object already exists
// (the composition root made it with its dependencies, which a QML-made singleton could not
// get), so create() hands that one over, and QML must not delete it.
//
//   class ChatController : public QObject, public QmlSingleton<ChatController> { QML_SINGLETON ... };
//   ChatController::setInstance(&chat);  // before the QML engine loads anything

#include <QJSEngine>
#include <QQmlEngine>

namespace inferscope {

template <typename T>
class QmlSingleton {
public:
    // The object QML gets; it must outlive every QML engine that uses it. nullptr: none (tests).
    static void setInstance(T* instance) { instance_ = instance; }
    static T* create(QQmlEngine*, QJSEngine*) {
        Q_ASSERT(instance_);
        QJSEngine::setObjectOwnership(instance_, QJSEngine::CppOwnership);
        return instance_;
    }

private:
    static inline T* instance_ = nullptr;
};

}  // namespace inferscope
