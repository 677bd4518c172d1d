import AdminService
import ServiceRuntime

@main
struct AdminMain {
    static func main() async throws {
        if let flag = Admin.help.answer(), let text = Admin.printed(flag) { return print(text) }
        try await PipelineService.main(Admin.help, settings: AdminSettings.init) { settings, service in
            try await Admin.build(settings, service: service).run()
        }
    }
}
