import SchedulerService
import ServiceRuntime

@main
struct SchedulerMain {
    static func main() async throws {
        try await PipelineService.main(Scheduler.help, settings: Scheduler.Settings.init) { settings, service in
            try await Scheduler.build(settings, service: service).run()
        }
    }
}
