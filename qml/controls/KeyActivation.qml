import QtQuick
import QtQuick.Controls

// Enter activates the focused button as Space does (Qt Quick Controls take Space only) and opens
// the focused combo box. Called from Keys.onReturnPressed of an item above the controls: key
// events a control does not accept go up to its parents. (By what the item has: instanceof
// AbstractButton is false for the app's own QML button types.)
QtObject {
    function isButton(item) {
        return item && "checkable" in item && "autoExclusive" in item && typeof item.toggle === "function" && typeof item.clicked === "function"
    }
    function isComboBox(item) {
        return item && "popup" in item && "currentIndex" in item && typeof item.activated === "function"
    }
    function activate(focused, event) {
        if (isButton(focused) && focused.enabled && focused.visible) {
            // An exclusive button already checked (the tab shown) stays checked.
            if (focused.checkable && !(focused.autoExclusive && focused.checked)) {
                focused.toggle()
                focused.toggled()
            }
            focused.clicked()
            event.accepted = true
        } else if (isComboBox(focused) && focused.enabled && focused.popup && !focused.popup.visible) {
            focused.popup.open()
            event.accepted = true
        } else {
            event.accepted = false
        }
    }
}
