import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Library
import Inferscope

// The Hugging Face token a gated or private repository needs (ModelDownloads.setToken): HF_TOKEN
// when it is set (said, not editable), else typed here — for this run, or remembered in the system
// keyring. Sent to the hub's own address only, never to its file servers.
RowLayout {
    id: row
    property bool highlighted: false
    spacing: Theme.spacing

    readonly property string source: ModelDownloads.tokenSource

    Label {
        objectName: "hubTokenState"
        Layout.fillWidth: !tokenField.visible
        wrapMode: Text.Wrap
        font.pixelSize: Theme.fontSmall
        font.bold: row.highlighted
        color: ModelDownloads.tokenProblem !== "" ? Theme.warning : row.highlighted ? Theme.text : Theme.muted
        text: ModelDownloads.tokenProblem !== "" ? ModelDownloads.tokenProblem
              : row.source === "environment" ? qsTr("Hugging Face token: HF_TOKEN, from the environment")
              : row.source === "keyring" ? qsTr("Hugging Face token: remembered in the system keyring")
              : row.source === "session" ? qsTr("Hugging Face token: for this run")
              : qsTr("Hugging Face token (for gated and private repositories):")
    }
    TextField {
        id: tokenField
        objectName: "hubToken"
        visible: row.source === ""
        Layout.fillWidth: true
        echoMode: TextInput.Password
        placeholderText: qsTr("hf_…")
        selectByMouse: true
        Accessible.name: qsTr("Hugging Face token")
        // Printable ASCII only, as the hub's tokens are.
        validator: RegularExpressionValidator { regularExpression: /[\x21-\x7e]*/ }
        onAccepted: useButton.clicked()
    }
    CheckBox {
        id: remember
        objectName: "hubTokenRemember"
        visible: tokenField.visible
        text: qsTr("Remember")
        ToolTip.visible: hovered
        ToolTip.text: qsTr("Kept in the system keyring, never in the settings file")
    }
    Button {
        id: useButton
        objectName: "hubTokenUse"
        visible: tokenField.visible
        text: qsTr("Use")
        enabled: tokenField.text !== ""
        onClicked: {
            ModelDownloads.setToken(tokenField.text, remember.checked)
            tokenField.text = ""
            // The repository that refused us is asked again with it.
            if (ModelDownloads.deniedPage !== "" && ModelDownloads.repo !== "") ModelDownloads.listFiles(ModelDownloads.repo)
        }
    }
    Button {
        objectName: "hubTokenForget"
        visible: row.source === "session" || row.source === "keyring"
        text: qsTr("Forget")
        onClicked: ModelDownloads.setToken("", false)
    }
}
