import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

struct AttachmentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachment", abstract: "The bytes of attachments: copy one out of the store, downloading it if needed.",
        subcommands: [GetAttachment.self])

    struct GetAttachment: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get", abstract: "Write a record's attachment to a file, downloading it first if the device lacks it.")

        @OptionGroup var options: StoreOptions
        @Argument(help: "The entity.") var entity: String
        @Argument(help: "The record's ID.") var id: String
        @Argument(help: "The attachment attribute.") var attribute: String
        @Option(help: "Where to write the bytes (an existing file is replaced).") var out: String

        func run() async throws {
            try await reportingErrors {
                let store = try await options.open()
                guard let schemaEntity = store.schema.entity(entity) else {
                    throw CommandFailure("the schema has no entity \(entity)")
                }
                guard let schemaAttribute = schemaEntity.attribute(attribute) else {
                    throw CommandFailure("\(entity) has no attribute \(attribute)")
                }
                guard schemaAttribute.type == .attachment else {
                    throw CommandFailure("\(entity).\(attribute) is a \(schemaAttribute.type.name) attribute, not an attachment")
                }
                guard let record = try await store.table(entity).find(try ValueParsing.recordID(id)) else {
                    throw CommandFailure("\(entity) \(id) does not exist")
                }
                guard let attachment = record.attachment(attribute) else {
                    throw CommandFailure("\(entity) \(id) has no \(attribute)")
                }
                let download: AttachmentDownload
                do {
                    download = try await store.downloadAttachment(attachment)
                } catch let failure as SyncFailure {
                    throw CommandFailure("cannot download \(attachment.sha256): \(failure)")
                }
                let target = URL(fileURLWithPath: out)
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: download.file, to: target)
                if options.json {
                    struct Written: Encodable {
                        var file: String
                        var attachment: WireJSON
                        var bytesReceived: Int64
                        var resumedFrom: Int64
                    }
                    JSONOutput.print(
                        Written(
                            file: out, attachment: WireJSON(.attachment(attachment)), bytesReceived: download.bytesReceived,
                            resumedFrom: download.resumedFrom))
                } else {
                    let resumed =
                        download.resumedFrom > 0
                        ? "; downloaded \(download.bytesReceived) bytes from byte \(download.resumedFrom), where an earlier download stopped"
                        : download.bytesReceived > 0 ? "; downloaded them" : ""
                    say("Wrote \(attachment.size) bytes (\(attachment.type)) to \(out)\(resumed).")
                }
            }
        }
    }
}
