import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Inferscope.Base
import Inferscope.Library
import Inferscope

// The library's "Get from Hugging Face" tab (ModelDownloads): a search, a repository's GGUF files
// with what each is and whether it fits (read from its header), what of each is here already (a
// finished download opens, a partial one resumes, after a restart too), one download at a time
// into our folder; the token a gated or private repository needs, and what to do when it refuses.
ColumnLayout {
    id: tab
    spacing: Theme.spacing

    signal openFile(string path)

    RowLayout {
        Layout.fillWidth: true
        spacing: Theme.spacing
        TextField {
            id: searchField
            objectName: "hubSearch"
            Layout.fillWidth: true
            placeholderText: qsTr("Search GGUF models, e.g. qwen2.5 0.5b instruct")
            selectByMouse: true
            Accessible.name: qsTr("Search the Hugging Face hub")
            onAccepted: ModelDownloads.search(text)
        }
        Button {
            objectName: "hubSearchButton"
            text: qsTr("Search")
            enabled: searchField.text.trim() !== ""
            onClicked: ModelDownloads.search(searchField.text)
        }
        BusyIndicator { running: ModelDownloads.browsing; visible: running; implicitWidth: 24; implicitHeight: 24 }
    }
    RowLayout {
        Layout.fillWidth: true
        visible: hubError.text !== ""
        spacing: Theme.spacing
        Label {
            id: hubError
            objectName: "hubError"
            Layout.fillWidth: true
            text: ModelDownloads.browseError
            color: Theme.danger
            wrapMode: Text.Wrap
        }
        Button {
            objectName: "hubDeniedPage"
            visible: ModelDownloads.deniedPage !== ""
            text: qsTr("Open its page")
            onClicked: Qt.openUrlExternally(ModelDownloads.deniedPage)
            ToolTip.visible: hovered
            ToolTip.text: ModelDownloads.deniedPage
        }
    }
    RowLayout {
        Layout.fillWidth: true
        Layout.fillHeight: true
        spacing: Theme.spacing
        ListView {
            id: repoList
            objectName: "hubRepos"
            Layout.preferredWidth: 260
            Layout.fillHeight: true
            clip: true
            // Before a search: small instruct models of the families the engine runs, each with
            // its licence (the repository's model card has its terms).
            readonly property var suggestions: [
                {id: "Qwen/Qwen2.5-0.5B-Instruct-GGUF", downloads: NaN, likes: NaN, note: qsTr("Qwen 2.5, 0.5B · Apache 2.0")},
                {id: "bartowski/Llama-3.2-1B-Instruct-GGUF", downloads: NaN, likes: NaN, note: qsTr("Llama 3.2, 1B · Llama 3.2 Community License")},
                {id: "bartowski/google_gemma-3-1b-it-qat-GGUF", downloads: NaN, likes: NaN, note: qsTr("Gemma 3, 1B · Gemma Terms of Use")}
            ]
            header: Item {
                width: ListView.view.width
                height: hint.visible ? hint.implicitHeight + Theme.spacing : 0
                Label {
                    id: hint
                    objectName: "hubHint"
                    width: parent.width
                    visible: ModelDownloads.repos.length === 0
                    wrapMode: Text.Wrap
                    color: Theme.muted
                    font.pixelSize: Theme.fontSmall
                    text: qsTr("Search the hub by name, or start from one of these:")
                }
            }
            model: ModelDownloads.repos.length > 0 ? ModelDownloads.repos : suggestions
            ScrollBar.vertical: ScrollBar {}
            delegate: ItemDelegate {
                required property var modelData
                required property int index
                objectName: "hubRepo" + index
                width: ListView.view.width
                highlighted: modelData.id === ModelDownloads.repo
                text: modelData.note !== undefined ? modelData.id + "\n" + modelData.note : modelData.id
                font.pixelSize: Theme.fontSmall
                onClicked: ModelDownloads.listFiles(modelData.id)
                ToolTip.visible: hovered
                ToolTip.text: modelData.note !== undefined ? modelData.note
                              : qsTr("%1 downloads, %2 likes").arg(Theme.count(modelData.downloads)).arg(Theme.count(modelData.likes))
            }
        }
        ListView {
            objectName: "hubFiles"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: ModelDownloads.files
            ScrollBar.vertical: ScrollBar {}
            delegate: HubFileRow {
                width: ListView.view.width
                onOpenFile: path => tab.openFile(path)
            }
        }
    }
    HubToken {
        Layout.fillWidth: true
        // Said first when a repository refused us: the way in is a token.
        highlighted: ModelDownloads.deniedPage !== ""
    }
    // The download under way, or how the last one ended.
    ColumnLayout {
        Layout.fillWidth: true
        visible: ModelDownloads.downloading || ModelDownloads.downloadMessage !== ""
        spacing: Theme.spacing / 2
        RowLayout {
            Layout.fillWidth: true
            visible: ModelDownloads.downloading
            ProgressBar {
                objectName: "hubProgress"
                Layout.fillWidth: true
                from: 0
                to: Math.max(1, ModelDownloads.bytesTotal)
                value: ModelDownloads.bytesDone
            }
            Button {
                objectName: "hubCancel"
                text: qsTr("Stop")
                onClicked: ModelDownloads.cancelDownload()
                ToolTip.visible: hovered
                ToolTip.text: qsTr("The part downloaded is kept: downloading the file again resumes from it.")
            }
        }
        Label {
            objectName: "hubProgressText"
            Layout.fillWidth: true
            visible: ModelDownloads.downloading
            font.pixelSize: Theme.fontSmall
            elide: Text.ElideMiddle
            text: qsTr("%1: %2 of %3 · %4/s · %5").arg(ModelDownloads.downloadName)
                      .arg(Theme.bytes(ModelDownloads.bytesDone)).arg(Theme.bytes(ModelDownloads.bytesTotal))
                      .arg(Theme.bytes(ModelDownloads.bytesPerSecond))
                      .arg(ModelDownloads.secondsLeft < 0 ? qsTr("time left unknown")
                           : ModelDownloads.secondsLeft < 90 ? qsTr("%1 s left").arg(Math.ceil(ModelDownloads.secondsLeft))
                           : qsTr("%1 min left").arg(Math.ceil(ModelDownloads.secondsLeft / 60)))
        }
        Label {
            objectName: "hubMessage"
            Layout.fillWidth: true
            visible: !ModelDownloads.downloading && text !== ""
            wrapMode: Text.Wrap
            font.pixelSize: Theme.fontSmall
            text: ModelDownloads.downloadMessage
        }
    }
}
