import DispatcherService
import ServiceRuntime

@main
struct DispatcherMain {
    static func main() async throws {
        try await PipelineService.main(Dispatcher.help, settings: Dispatcher.Settings.init) { settings, service in
            try await Dispatcher.build(settings, service: service).run()
        }
    }
}
