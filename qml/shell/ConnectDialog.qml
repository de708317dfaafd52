import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Engine
import Inferscope

// "Connect to a server…": an OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, Ollama,
// `inferscope-cli serve`) as the model. Its models are listed (GET /v1/models) as the address or
// key is entered; what went wrong is said under the fields. The key is kept for this run only,
// unless "Remember" is checked: then in the system keyring (ServerKeyring), never in the settings.
Dialog {
    id: dialog
    objectName: "connectDialog"
    title: qsTr("Connect to a server")
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(640, parent ? parent.width - 4 * Theme.spacing : 640)
    padding: 2 * Theme.spacing
    onAccepted: {
        ServerKeyring.connectingWith(urlField.text, keyField.text, rememberBox.checked)
        EngineController.connectToServer(urlField.text, keyField.text, modelBox.currentText)
    }

    function list() {
        if (urlField.text.trim() === "") return
        if (keyField.text === "") ServerKeyring.lookUp(urlField.text)  // a remembered key lists again when found
        EngineController.listServerModels(urlField.text, keyField.text)
    }
    onOpened: { urlField.forceActiveFocus(); list() }

    Connections {
        target: ServerKeyring
        function onKeyFound(base, key) {
            if (keyField.text !== "") return
            keyField.text = key
            rememberBox.checked = true
            EngineController.listServerModels(urlField.text, keyField.text)
        }
    }

    // Listing waits for a pause in typing.
    Timer { id: pause; interval: 600; onTriggered: dialog.list() }

    contentItem: ColumnLayout {
        spacing: Theme.spacing
        Label {
            text: qsTr("Chat with a model served elsewhere, through its OpenAI-compatible API. The inspector shows the 20 most likely tokens the server reports at each step.")
            wrapMode: Text.WordWrap
            color: Theme.muted
            Layout.fillWidth: true
        }
        GridLayout {
            columns: 2
            columnSpacing: Theme.spacing
            Layout.fillWidth: true
            Label { text: qsTr("Address") }
            TextField {
                id: urlField
                objectName: "serverUrl"
                text: "http://127.0.0.1:8080"
                placeholderText: "http://127.0.0.1:8080"
                selectByMouse: true
                Layout.fillWidth: true
                Accessible.name: qsTr("Server address")
                onTextEdited: pause.restart()
                onAccepted: dialog.list()
            }
            Label { text: qsTr("API key") }
            TextField {
                id: keyField
                objectName: "serverKey"
                echoMode: TextInput.Password
                placeholderText: qsTr("optional")
                selectByMouse: true
                Layout.fillWidth: true
                Accessible.name: qsTr("API key")
                onTextEdited: pause.restart()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("Sent as Authorization: Bearer, only to this server. Kept for this run only unless you ask the system keyring to remember it; never written to the settings.")
            }
            Item { width: 1; height: 1 }
            CheckBox {
                id: rememberBox
                objectName: "rememberKey"
                text: qsTr("Remember the key in the system keyring")
                enabled: keyField.text !== ""
                padding: 0
                Accessible.name: text
            }
            Label { text: qsTr("Model") }
            ComboBox {
                id: modelBox
                objectName: "serverModel"
                model: EngineController.serverListing.models
                enabled: count > 0
                Layout.fillWidth: true
                Accessible.name: qsTr("Model")
                displayText: count > 0 ? currentText : (EngineController.serverListing.listing ? qsTr("asking the server…") : qsTr("no models listed"))
            }
        }
        // A server's deadlines (AppSettings, remote/reply_guard.h): kept between runs.
        RowLayout {
            spacing: Theme.spacing
            Layout.fillWidth: true
            Label { text: qsTr("Timeouts (s):"); color: Theme.muted }
            Label { text: qsTr("connecting"); color: Theme.muted }
            SpinBox {
                id: connectBox
                objectName: "connectTimeout"
                from: 1; to: 600; editable: true
                Layout.preferredWidth: 88
                value: AppSettings.connectTimeout
                Accessible.name: qsTr("Seconds to connect")
                onValueModified: AppSettings.setRemoteTimeouts(value, firstByteBox.value, idleBox.value)
            }
            Label { text: qsTr("first token"); color: Theme.muted }
            SpinBox {
                id: firstByteBox
                objectName: "firstByteTimeout"
                from: 1; to: 86400; editable: true
                Layout.preferredWidth: 96
                value: AppSettings.firstByteTimeout
                Accessible.name: qsTr("Seconds to the first token")
                onValueModified: AppSettings.setRemoteTimeouts(connectBox.value, value, idleBox.value)
                ToolTip.visible: hovered
                ToolTip.text: qsTr("How long a server may think before it sends anything: a busy server queues the request, a long prompt takes a while to read.")
            }
            Label { text: qsTr("silence"); color: Theme.muted }
            SpinBox {
                id: idleBox
                objectName: "idleTimeout"
                from: 1; to: 86400; editable: true
                Layout.preferredWidth: 96
                value: AppSettings.idleTimeout
                Accessible.name: qsTr("Seconds of silence mid-answer")
                onValueModified: AppSettings.setRemoteTimeouts(connectBox.value, firstByteBox.value, value)
            }
            Item { Layout.fillWidth: true }
        }
        Label {
            objectName: "keyringProblem"
            visible: text !== ""
            text: ServerKeyring.problem
            color: Theme.muted
            wrapMode: Text.WordWrap
            Layout.fillWidth: true
        }
        Label {
            objectName: "serverError"
            visible: text !== ""
            text: EngineController.serverListing.error
            color: Theme.danger
            wrapMode: Text.WordWrap
            Layout.fillWidth: true
        }
    }
    footer: DialogButtonBox {
        Button {
            objectName: "connectButton"
            text: qsTr("Connect")
            highlighted: true
            enabled: modelBox.count > 0 && !EngineController.serverListing.listing
            DialogButtonBox.buttonRole: DialogButtonBox.AcceptRole
        }
        Button {
            text: qsTr("Cancel")
            DialogButtonBox.buttonRole: DialogButtonBox.RejectRole
        }
    }
}
