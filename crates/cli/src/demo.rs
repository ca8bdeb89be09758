//! The built-in example: a small two-stream training trace written by code
//! at run time, so `lumos demo` needs no input files.

use std::fmt::Write;

/// A Kineto trace of `steps` iterations: each step launches `kernels`
/// compute kernels on stream 7, then a gradient all-reduce on stream 20
/// joined by event record / stream wait (with `cuda_sync` evidence), then
/// synchronizes the host with `cudaStreamSynchronize`.
pub fn demo_trace(steps: usize, kernels: usize) -> String {
    let mut ev: Vec<String> = Vec::new();
    let (pid, tid) = (100, 100);
    let mut t: i64 = 1_000; // us
    let mut corr = 1;
    let mut gpu_free: i64 = 0;
    let mut push = |s: String| ev.push(s);
    for step in 0..steps {
        let step_start = t;
        let mut cpu = Vec::new();
        t += 20;
        for k in 0..kernels {
            let op_start = t;
            let launch = t + 5;
            let kdur = 40 + (k as i64 * 37) % 90;
            let kstart = (launch + 8).max(gpu_free + 2);
            gpu_free = kstart + kdur;
            cpu.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":{pid},"tid":{tid},"ts":{op_start},"dur":20,"args":{{"External id":{corr},"Input Dims":[[32,1024],[1024,1024]]}}}}"#));
            cpu.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{pid},"tid":{tid},"ts":{launch},"dur":7,"args":{{"External id":{corr},"correlation":{corr}}}}}"#));
            cpu.push(format!(r#"{{"ph":"X","cat":"kernel","name":"sm90_gemm_bf16_{k}","pid":0,"tid":7,"ts":{kstart},"dur":{kdur},"args":{{"External id":{corr},"device":0,"stream":7,"correlation":{corr}}}}}"#));
            cpu.push(format!(r#"{{"ph":"s","id":{corr},"pid":{pid},"tid":{tid},"ts":{launch},"cat":"ac2g","name":"ac2g"}}"#));
            cpu.push(format!(r#"{{"ph":"f","id":{corr},"pid":0,"tid":7,"ts":{kstart},"cat":"ac2g","name":"ac2g","bp":"e"}}"#));
            corr += 1;
            t += 25;
        }
        // Event record on the compute stream, wait on the comm stream, then
        // the all-reduce.
        let rec = corr;
        cpu.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaEventRecord","pid":{pid},"tid":{tid},"ts":{t},"dur":3,"args":{{"correlation":{rec}}}}}"#));
        t += 4;
        let wait = rec + 1;
        cpu.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":{pid},"tid":{tid},"ts":{t},"dur":3,"args":{{"correlation":{wait}}}}}"#));
        cpu.push(format!(r#"{{"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":20,"ts":{},"dur":1,"args":{{"cuda_sync_kind":"Stream Wait Event","stream":20,"correlation":{wait},"device":0,"wait_on_stream":7,"wait_on_cuda_event_record_corr_id":{rec}}}}}"#, t + 1));
        t += 4;
        let ar = wait + 1;
        let ar_start = gpu_free + 3;
        let ar_dur = 300;
        cpu.push(format!(r#"{{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":{pid},"tid":{tid},"ts":{t},"dur":12,"args":{{"External id":{ar},"Collective name":"allreduce","In msg nelems":4194304,"Out msg nelems":4194304,"Group size":8,"dtype":"BFloat16","Process Group Name":"0","Process Group Ranks":"[0, 1, 2, 3, 4, 5, 6, 7]","Seq":{step}}}}}"#));
        cpu.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{pid},"tid":{tid},"ts":{},"dur":6,"args":{{"External id":{ar},"correlation":{ar}}}}}"#, t + 3));
        cpu.push(format!(r#"{{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)","pid":0,"tid":20,"ts":{ar_start},"dur":{ar_dur},"args":{{"External id":{ar},"device":0,"stream":20,"correlation":{ar},"Collective name":"allreduce","In msg nelems":4194304,"Out msg nelems":4194304,"Group size":8,"dtype":"BFloat16","Process Group Name":"0","Seq":{step}}}}}"#));
        t += 20;
        let sync = ar + 1;
        let sync_end = ar_start + ar_dur + 4;
        cpu.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":{pid},"tid":{tid},"ts":{t},"dur":{},"args":{{"correlation":{sync}}}}}"#, sync_end - t));
        cpu.push(format!(r#"{{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":20,"ts":{},"dur":1,"args":{{"cuda_sync_kind":"Stream Sync","stream":20,"correlation":{sync},"device":0}}}}"#, sync_end - 2));
        gpu_free = ar_start + ar_dur;
        t = sync_end + 15;
        corr = sync + 1;
        push(format!(
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":{pid},"tid":{tid},"ts":{step_start},"dur":{},"args":{{}}}}"#,
            t - step_start
        ));
        for c in cpu {
            push(c);
        }
        t += 10;
    }
    let mut out = String::new();
    let _ = write!(
        out,
        r#"{{"schemaVersion":1,"deviceProperties":[{{"id":0,"name":"lumos demo GPU","totalGlobalMem":85899345920,"numSms":132}}],"distributedInfo":{{"backend":"nccl","rank":0,"world_size":8}},"traceEvents":[{}]}}"#,
        ev.join(",\n")
    );
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn demo_trace_reads_and_builds() {
        let text = super::demo_trace(3, 5);
        let t =
            lumos_trace::read_bytes(std::path::Path::new("demo.json"), text.as_bytes()).unwrap();
        assert_eq!(t.skipped.total(), 0);
        let (g, _, r) = lumos_graph::build(&t);
        assert_eq!(g.steps.len(), 3);
        assert!(lumos_graph::check(&g).is_empty());
        assert_eq!(
            r.inferred.get(&(
                lumos_graph::DepKind::InterStream,
                lumos_graph::Rule::CudaSyncEvent
            )),
            Some(&3)
        );
    }
}
